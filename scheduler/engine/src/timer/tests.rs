use super::*;
use sundial_core::types::TriggerKind;

fn run(job: &str, at: i64) -> Run {
    let mut r = Run::pending("ten_1", job, 1, format!("s:{at}"), TriggerKind::Schedule, at, 0);
    r.id = format!("{job}@{at}");
    r.state = RunState::Queued; // as claimed
    r
}

#[test]
fn runs_pop_in_due_order_and_ids_stay_unique() {
    let t = Timer::default();
    t.push_run(30, &run("j", 30));
    t.push_run(10, &run("k", 10));
    t.push_run(10, &run("k", 10));
    t.push(20, "loose".into());
    assert_eq!(t.len(), 3);
    assert_eq!(t.next_due(), Some(10));
    assert_eq!(t.pop_due(20, 10_000), ["k@10", "loose"]);
    assert_eq!(t.pop_due(29, 10_000), Vec::<String>::new());
    assert_eq!(t.pop_due(30, 10_000), ["j@30"]);
    assert_eq!(t.len(), 0);
    assert_eq!(t.next_due(), None);
}

/// Issue 26: a tenant's herd of 1,000 fires and another tenant's one fire, due at the
/// same instant and pushed last, go out with the first batch, not after the herd.
#[test]
fn at_one_instant_a_small_tenants_fire_is_in_the_first_batch_not_behind_a_herd() {
    let t = Timer::default();
    for i in 0..1000 {
        t.push_run(5_000, &run(&format!("big{i}"), 5_000));
    }
    let mut small = run("small", 5_000);
    small.tenant_id = "ten_small".into();
    t.push_run(5_000, &small);
    let first = t.pop_due_max(5_000, 10_000, 256, i64::MIN);
    let ids: Vec<&str> = first.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(ids[..3], ["big0@5000", "small@5000", "big1@5000"], "tenants take turns at an instant");
    // The big tenant's own fires keep their order.
    let rest = t.pop_due(5_000, 10_000);
    assert_eq!(rest.len(), 1000 - 255);
    assert_eq!(rest[0], "big255@5000");
    assert_eq!(rest.last().map(String::as_str), Some("big999@5000"));
}

/// Issue 26: a backlog of one tenant's runs due earlier (a node behind) and another
/// tenant's fresh fire: the fire goes in the first batch, the backlog keeps its order.
#[test]
fn a_backlog_of_one_tenant_does_not_hold_back_another_tenants_fire() {
    let t = Timer::default();
    for i in 0..1000 {
        t.push_run(1_000 + i, &run(&format!("late{i}"), 1_000 + i));
    }
    let mut small = run("small", 5_000);
    small.tenant_id = "ten_small".into();
    t.push_run(5_000, &small);
    let first = t.pop_due_max(5_000, 10_000, 16, i64::MIN);
    let ids: Vec<&str> = first.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(ids[..3], ["late0@1000", "small@5000", "late1@1001"], "tenants take turns across instants");
    let rest = t.pop_due(5_000, 10_000);
    assert_eq!(rest.len(), 1000 - 15);
    assert!(rest.windows(2).all(|w| {
        let n = |s: &str| s.trim_start_matches("late").split('@').next().unwrap().parse::<u32>().unwrap();
        n(&w[0]) < n(&w[1])
    }));
    assert_eq!(t.len(), 0);
    assert_eq!(t.next_due(), None);
}

/// Runs held are counted per tenant (what a tenant's share of the capacity is checked
/// against), until their dispatch is over.
#[test]
fn runs_held_are_counted_per_tenant_until_their_dispatch_is_over() {
    let t = Timer::default();
    let mut b = run("b", 10);
    b.tenant_id = "ten_b".into();
    t.push_run(10, &run("a", 10));
    t.push_run(11, &run("a", 11));
    t.push_run(10, &b);
    let (a, bk) = (tenant_key("ten_1"), tenant_key("ten_b"));
    assert_eq!(t.per_tenant().get(&a), Some(&2));
    assert_eq!(t.per_tenant().get(&bk), Some(&1));
    let popped = t.pop_due(20, 10_000);
    assert_eq!(t.per_tenant().get(&a), Some(&2), "being dispatched still counts");
    for id in &popped {
        t.after_dispatch(id, 20, 30_000);
    }
    assert!(t.per_tenant().is_empty(), "{:?}", t.per_tenant());
}

/// Entries due within the dispatch lead, taken into the turns by one pop, are not popped
/// by a later pop whose horizon is before them.
#[test]
fn a_pop_never_takes_a_run_due_after_its_horizon() {
    let t = Timer::default();
    t.push_run(100, &run("a", 100));
    t.push_run(300, &run("b", 300));
    assert_eq!(t.pop_due_max(300, 10_000, 1, i64::MIN).len(), 1, "a");
    assert_eq!(t.pop_due(200, 10_000), Vec::<String>::new(), "b is due at 300");
    assert_eq!(t.next_due(), Some(300));
    assert_eq!(t.pop_due(300, 10_000), ["b@300"]);
    assert_eq!(t.pop_due(1_000, 10_000), Vec::<String>::new(), "popped once");
    assert_eq!(t.next_due(), None);
}

#[test]
fn a_serial_backlog_polls_through_one_parked_run_and_drains_in_order() {
    let t = Timer::default();
    for at in [1, 2, 3, 4] {
        t.push_run(at, &run("j", at));
    }
    t.push_run(2, &run("other", 2));
    // The first pass pops the whole backlog: nothing is parked yet.
    assert_eq!(t.pop_due(10, 10_000), ["j@1", "j@2", "other@2", "j@3", "j@4"]);
    // j@1 is dispatched for good; j@2 comes back Blocked (dispatch_batch re-pushes it).
    t.after_dispatch("j@1", 10, 10 + 30_000);
    t.push(510, "j@2".into());
    t.after_dispatch("j@2", 10, 10 + 30_000);
    t.after_dispatch("other@2", 10, 10 + 30_000);
    // j@3 and j@4 came back Blocked too before the park was known: they are re-pushed,
    // and from now on they wait behind j@2 without polling.
    t.push(510, "j@3".into());
    t.after_dispatch("j@3", 10, 10 + 30_000);
    t.push(510, "j@4".into());
    t.after_dispatch("j@4", 10, 10 + 30_000);
    assert_eq!(t.pop_due(510, 10_000), ["j@2"], "only the parked run polls");
    assert_eq!(t.len(), 2, "the others wait in memory (j@2 is being dispatched)");
    t.push(1010, "j@2".into()); // Blocked again
    t.after_dispatch("j@2", 510, 510 + 30_000);
    assert_eq!(t.pop_due(2000, 10_000), ["j@2"]);
    // j@2 is dispatched for good: the next waiting run goes at once, then the next.
    t.after_dispatch("j@2", 2000, 2000 + 30_000);
    assert_eq!(t.pop_due(2000, 10_000), ["j@3"]);
    t.after_dispatch("j@3", 2001, 2001 + 30_000);
    assert_eq!(t.pop_due(2001, 10_000), ["j@4"]);
    t.after_dispatch("j@4", 2002, 2002 + 30_000);
    assert_eq!((t.len(), t.pop_due(i64::MAX, 10_000)), (0, Vec::<String>::new()));
}

#[test]
fn a_run_of_the_job_going_here_wakes_the_parked_poller_but_never_mid_dispatch() {
    let t = Timer::default();
    t.push_run(0, &run("j", 0));
    t.push_run(0, &run("j", 9)); // another run of the job in flight here (due 0 for the test)
    for at in [1, 2] {
        t.push_run(at, &run("j", at));
    }
    assert_eq!(t.pop_due(0, 10_000), ["j@0", "j@9"]); // slow synchronous deliveries, still under way
    assert_eq!(t.pop_due(2, 10_000), ["j@1", "j@2"]);
    // j@1 and j@2 are blocked by j@0: j@1 (the earlier) parks and polls, j@2 waits.
    t.push(502, "j@2".into());
    t.after_dispatch("j@2", 2, 2 + 30_000);
    t.push(501, "j@1".into());
    t.after_dispatch("j@1", 2, 2 + 30_000);
    assert_eq!(t.len(), 2);
    // j@0 is done: the parked j@1 need not wait for its 500 ms poll.
    assert_eq!(t.pop_due(100, 10_000), Vec::<String>::new());
    t.after_dispatch("j@0", 100, 100 + 30_000);
    assert_eq!(t.pop_due(100, 10_000), ["j@1"]);
    // While j@1's own dispatch is under way, j@9 finishing does not wake it a second
    // time (that would send it twice), and j@2 still waits behind it.
    t.after_dispatch("j@9", 101, 101 + 30_000);
    assert_eq!(t.pop_due(600, 10_000), Vec::<String>::new());
    // j@1 is dispatched for good: j@2 is released.
    t.after_dispatch("j@1", 600, 600 + 30_000);
    assert_eq!(t.pop_due(600, 10_000), ["j@2"]);
    t.after_dispatch("j@2", 601, 601 + 30_000);
    assert_eq!(t.len(), 0);
}

#[test]
fn a_run_let_go_after_waiting_is_never_due_before_its_instant() {
    // Found by the J=5,000 spread benchmark: fires popped ahead by the dispatch lead that
    // waited behind their job's previous run were let go "now", and sent up to a few
    // hundred ms before their instant.
    let t = Timer::default();
    t.push_run(1_000, &run("j", 1_000));
    t.push_run(2_000, &run("j", 2_000));
    assert_eq!(t.pop_due(1_000, 10_000), ["j@1000"]);
    t.push(1_500, "j@1000".into());
    t.after_dispatch("j@1000", 1_000, 31_000); // blocked: parked
    // At 1,600 with a lead of 500 ms: the parked j@1000 polls, j@2000 (popped ahead) waits behind it.
    assert_eq!(t.pop_due(2_100, 10_000), ["j@1000"]);
    assert_eq!(t.len(), 1, "j@2000 waits");
    // j@1000 goes for good at 1,600: j@2000 is let go, but not before 2,000.
    t.after_dispatch("j@1000", 1_600, 31_600);
    assert_eq!(t.pop_due(1_999, 10_000), Vec::<String>::new());
    assert_eq!(t.pop_due(2_000, 10_000), ["j@2000"]);
}

/// A hung executor's serial job: its run is sent and waits out its timeout, its next fire
/// is held back. The held fire does not check the database every 500 ms for nothing (a
/// thousand such jobs made thousands of dispatch transactions a second, ahead of every
/// other tenant's fires on SQLite's one writer): it checks a third of a lease later, to
/// renew its claim, and goes as soon as the delivery ends.
#[test]
fn a_run_held_behind_a_delivery_under_way_here_polls_slowly_and_goes_when_it_ends() {
    let t = Timer::default();
    t.push_run(0, &run("j", 0));
    t.push_run(1_000, &run("j", 1_000));
    assert_eq!(t.pop_due(0, 10_000), ["j@0"]);
    t.delivering("j@0"); // sent: the executor does not answer
    assert_eq!(t.pop_due(1_000, 10_000), ["j@1000"]);
    t.push(1_000 + BLOCKED_POLL_MS, "j@1000".into()); // Blocked
    t.after_dispatch("j@1000", 1_000, 31_000);
    assert_eq!(t.next_due(), Some(11_000), "checks again a third of its lease later");
    assert_eq!(t.pop_due(10_999, 10_000), Vec::<String>::new());
    t.after_dispatch("j@0", 5_000, 35_000); // the delivery ends (timed out)
    assert_eq!(t.pop_due(5_000, 10_000), ["j@1000"], "woken at once");
}

/// Held back by a run this node is not delivering (answered `202`, or sent by another
/// node): nothing here would wake it, so it polls at the usual pace.
#[test]
fn a_run_held_behind_a_run_not_delivered_here_polls_every_half_second() {
    let t = Timer::default();
    t.push_run(0, &run("j", 0));
    t.push_run(1_000, &run("j", 1_000));
    assert_eq!(t.pop_due(0, 10_000), ["j@0"]);
    t.delivering("j@0");
    t.after_dispatch("j@0", 10, 30_010); // answered 202: its delivery is over, the run is not
    assert_eq!(t.pop_due(1_000, 10_000), ["j@1000"]);
    t.push(1_000 + BLOCKED_POLL_MS, "j@1000".into());
    t.after_dispatch("j@1000", 1_000, 31_000);
    assert_eq!(t.next_due(), Some(1_500));
    // A run whose delivery is marked twice leaves no count behind that would quiet its
    // job's next held run.
    t.push_run(2_000, &run("k", 2_000));
    t.push_run(3_000, &run("k", 3_000));
    assert_eq!(t.pop_due(2_000, 10_000), ["j@1000", "k@2000"]);
    t.delivering("k@2000");
    t.delivering("k@2000");
    t.after_dispatch("k@2000", 2_010, 32_010);
    assert_eq!(t.pop_due(3_000, 10_000), ["k@3000"]);
    t.push(3_000 + BLOCKED_POLL_MS, "k@3000".into());
    t.after_dispatch("k@3000", 3_000, 33_000);
    assert_eq!(t.pop_due(3_500, 10_000), ["k@3000"]);
}

#[test]
fn a_wake_that_comes_while_the_parked_run_checks_is_not_lost() {
    let t = Timer::default();
    t.push_run(0, &run("j", 0));
    t.push_run(1, &run("j", 1));
    assert_eq!(t.pop_due(0, 10_000), ["j@0"]); // delivered, slowly
    assert_eq!(t.pop_due(1, 10_000), ["j@1"]); // blocked by j@0: parked
    t.push(501, "j@1".into());
    t.after_dispatch("j@1", 1, 30_001);
    assert_eq!(t.pop_due(501, 10_000), ["j@1"]); // its poll is under way when ...
    t.after_dispatch("j@0", 502, 30_502); // ... j@0 is done
    // The poll, which read j@0 still in flight, comes back Blocked: it checks again at
    // once, not after another 500 ms.
    t.push(1_003, "j@1".into());
    t.after_dispatch("j@1", 503, 30_503);
    assert_eq!(t.pop_due(503, 10_000), ["j@1"]);
}

/// The next fire's first check reads the run in flight, which ends before the check comes
/// back `Blocked`: nothing is parked yet for that end to wake, so the check itself goes
/// again at once, not after its poll interval (up to 10 s while a delivery is under way).
#[test]
fn a_run_ending_while_the_next_ones_first_check_is_under_way_wakes_it() {
    let t = Timer::default();
    t.push_run(0, &run("j", 0));
    t.push_run(1_000, &run("j", 1_000));
    assert_eq!(t.pop_due(0, 10_000), ["j@0"]);
    t.delivering("j@0");
    assert_eq!(t.pop_due(1_000, 10_000), ["j@1000"]); // its check reads j@0 in flight ...
    t.after_dispatch("j@0", 1_001, 31_001); // ... j@0's delivery ends ...
    t.push(1_002 + BLOCKED_POLL_MS, "j@1000".into()); // ... and the check says Blocked
    t.after_dispatch("j@1000", 1_002, 31_002);
    assert_eq!(t.pop_due(1_002, 10_000), ["j@1000"], "checks again at once");
    // That check dispatches it: the wake is used up, the job's next held fire polls as usual.
    t.delivering("j@1000");
    t.after_dispatch("j@1000", 1_003, 31_003);
    t.push_run(2_000, &run("j", 2_000));
    t.push_run(2_001, &run("j", 2_001));
    assert_eq!(t.pop_due(2_000, 10_000), ["j@2000"]);
    t.after_dispatch("j@2000", 2_000, 32_000); // answered 202
    assert_eq!(t.pop_due(2_001, 10_000), ["j@2001"]);
    t.push(2_001 + BLOCKED_POLL_MS, "j@2001".into());
    t.after_dispatch("j@2001", 2_001, 32_001);
    assert_eq!(t.next_due(), Some(2_501), "no wake left over");
}

/// A serial job whose run in flight failed and waits out its retry's backoff: its next
/// fire checks again when the retry is due, not every 500 ms (but never later than its
/// claim needs renewing), and every 500 ms when the decision cannot say.
#[test]
fn a_run_held_behind_a_retry_checks_again_when_the_retry_is_due() {
    assert_eq!(blocked_poll_at(1_000, None, 30_000), 1_500);
    assert_eq!(blocked_poll_at(1_000, Some(6_000), 30_000), 6_000);
    assert_eq!(blocked_poll_at(1_000, Some(1_100), 30_000), 1_500, "not sooner than a poll");
    assert_eq!(blocked_poll_at(1_000, Some(60_000), 30_000), 11_000, "a third of the lease");
    assert_eq!(blocked_poll_at(1_000, Some(60_000), 120_000), 1_000 + QUIET_POLLS);
    assert_eq!(blocked_poll_at(1_000, Some(60_000), 900), 1_500);
}

#[test]
fn drain_returns_waiting_runs_too() {
    let t = Timer::default();
    for at in [1, 2, 3] {
        t.push_run(at, &run("j", at));
    }
    assert_eq!(t.pop_due(1, 10_000), ["j@1"]);
    t.push(500, "j@1".into());
    t.after_dispatch("j@1", 1, 1 + 30_000); // parked
    assert!(t.pop_due(3, 10_000).is_empty(), "j@2 and j@3 wait behind j@1");
    let mut all = t.drain();
    all.sort();
    assert_eq!(all, ["j@1", "j@2", "j@3"]);
    assert_eq!(t.len(), 0);
}

#[test]
fn a_redelivery_or_retry_never_waits_behind_the_run_it_blocks() {
    // Found by the chaos test: a `dispatching` run recovered from a dead node is the run
    // in flight its job's parked successor waits for; holding it back waited forever.
    let t = Timer::default();
    t.push_run(1, &run("j", 1));
    assert_eq!(t.pop_due(1, 10_000), ["j@1"]);
    t.push(501, "j@1".into());
    t.after_dispatch("j@1", 1, 30_001); // parked: blocked by the orphaned dispatch below
    let mut orphan = run("j", 0);
    orphan.state = RunState::Dispatching;
    t.push_run(2, &orphan);
    let mut retry = run("j", -1);
    retry.state = RunState::Retrying;
    t.push_run(2, &retry);
    assert_eq!(t.pop_due(2, 10_000), ["j@0", "j@-1"], "both go, parked run or not (ties in the order pushed)");
}

#[test]
fn waiting_runs_renew_their_claim_before_its_lease_ends() {
    let t = Timer::default();
    let mut first = run("j", 1);
    first.lease_until_ms = Some(30_001);
    t.push_run(1, &first);
    let mut second = run("j", 2);
    second.lease_until_ms = Some(30_002);
    t.push_run(2, &second);
    assert_eq!(t.pop_due(1, 10_000), ["j@1"]);
    t.push(501, "j@1".into());
    t.after_dispatch("j@1", 1, 30_001); // parked (its dispatch check renewed its lease)
    assert!(t.pop_due(2, 10_000).is_empty(), "j@2 waits");
    // j@1 keeps polling (and renewing its own lease) while j@2 waits without a check...
    for now in [501, 1_001, 15_000] {
        assert_eq!(t.pop_due(now, 10_000), ["j@1"]);
        t.push(now + 500, "j@1".into());
        t.after_dispatch("j@1", now, now + 30_000);
    }
    // ... until a third of j@2's lease is left: it goes through one check, which renews it,
    // and comes back to wait.
    assert_eq!(t.pop_due(20_002, 10_000), ["j@1", "j@2"]);
    t.push(20_502, "j@2".into());
    t.after_dispatch("j@2", 20_002, 50_002);
    t.push(20_502, "j@1".into());
    t.after_dispatch("j@1", 20_002, 50_002);
    assert_eq!(t.pop_due(40_001, 10_000), ["j@1"], "j@2 waits again, renewed until 50,002");
    assert_eq!(t.len(), 1);
}
