//! Small domain values: enumerations (whose snake_case names are both the wire
//! and the storage form) and parsed strings (app names, webhook URLs).

use std::fmt;
use std::str::FromStr;

use crate::FieldError;

/// Declares a string-backed enum: serde as snake_case, `as_str`, `FromStr`, `ALL`.
macro_rules! str_enum {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $variant:ident => $s:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
        #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
        #[serde(rename_all = "snake_case")]
        pub enum $name { $($(#[$vm])* $variant),+ }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];
            pub fn as_str(&self) -> &'static str {
                match self { $($name::$variant => $s),+ }
            }
            pub fn names() -> String {
                [$($s),+].join(", ")
            }
        }
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result { f.write_str(self.as_str()) }
        }
        impl FromStr for $name {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                match s {
                    $($s => Ok($name::$variant),)+
                    _ => Err(format!("unknown value `{s}`, expected one of: {}", Self::names())),
                }
            }
        }
    };
}

str_enum!(
    /// What an API key may do inside its tenant. `Operator` keys manage tenants only.
    Role { Operator => "operator", Admin => "admin", Editor => "editor", Viewer => "viewer" }
);

impl Role {
    /// May this role change (create, update, delete, trigger) ordinary tenant objects?
    pub fn can_edit(self) -> bool {
        matches!(self, Role::Admin | Role::Editor)
    }
}

str_enum!(
    /// How an attempt picks its executor among the app's online executors.
    Route {
        Random => "random",
        RoundRobin => "round_robin",
        First => "first",
        Last => "last",
        ConsistentHash => "consistent_hash",
        LeastRecentlyUsed => "least_recently_used",
        LeastFrequentlyUsed => "least_frequently_used",
        Busyover => "busyover",
        Failover => "failover",
        Sharding => "sharding",
    }
);

str_enum!(
    /// What a new run does while the job's previous run is still running.
    BlockStrategy { Serial => "serial", DiscardLater => "discard_later", CoverEarly => "cover_early" }
);

str_enum!(
    /// What happens to a fire missed by more than the misfire threshold.
    MisfirePolicy { Skip => "skip", FireOnce => "fire_once", FireAll => "fire_all" }
);

str_enum!(
    /// What a failed attempt leads to.
    FailurePolicyKind { Discard => "discard", Retry => "retry" }
);

str_enum!(
    BackoffKind { Fixed => "fixed", Exponential => "exponential" }
);

str_enum!(
    /// Whether a job fires on its own. Manual triggers work in both states.
    JobState { Active => "active", Stopped => "stopped" }
);

str_enum!(
    /// Where a job came from: created through the API, or by an executor registering a handler.
    JobSource { Api => "api", Registration => "registration" }
);

str_enum!(
    ScheduleKind { Cron => "cron", FixedRate => "fixed_rate", Once => "once", Manual => "manual" }
);

str_enum!(
    /// The life of a run; see `docs/state-machine.md`.
    RunState {
        Pending => "pending",
        Queued => "queued",
        Dispatching => "dispatching",
        Running => "running",
        Retrying => "retrying",
        Succeeded => "succeeded",
        Failed => "failed",
        Cancelled => "cancelled",
        Expired => "expired",
        Skipped => "skipped",
    }
);

impl RunState {
    /// The states a run ends in; every event is refused there.
    pub const TERMINAL: &'static [RunState] =
        &[RunState::Succeeded, RunState::Failed, RunState::Cancelled, RunState::Expired, RunState::Skipped];

    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            RunState::Succeeded | RunState::Failed | RunState::Cancelled | RunState::Expired | RunState::Skipped
        )
    }
}

str_enum!(
    /// Why a run exists.
    TriggerKind { Schedule => "schedule", Manual => "manual", Api => "api", Parent => "parent", Misfire => "misfire" }
);

str_enum!(
    /// The language of a script: a WASI module, Python or JavaScript run inside WebAssembly,
    /// or a shell script run in an OS sandbox.
    ScriptRuntime { Wasm => "wasm", Python => "python", Javascript => "javascript", Bash => "bash", Sh => "sh" }
);

str_enum!(
    ExecutorState { Online => "online", Offline => "offline" }
);

str_enum!(
    /// When a child edge fires: the parent run `succeeded` (`on_success`, the default), it
    /// `failed` for good (`on_failure`: retries exhausted), or either (`always`; never for a
    /// `cancelled` parent).
    EdgeCondition { OnSuccess => "on_success", OnFailure => "on_failure", Always => "always" }
);

str_enum!(
    /// When a job with several parents (a fan-in) fires in a chain: once every parent it
    /// waits for has ended there with its edge's condition holding (`all`, the default), or
    /// as soon as one has (`any`).
    WaitFor { All => "all", Any => "any" }
);

impl EdgeCondition {
    /// Does an edge with this condition fire for a parent run that ended `state`?
    pub fn fires_on(self, state: RunState) -> bool {
        matches!(
            (self, state),
            (EdgeCondition::OnSuccess | EdgeCondition::Always, RunState::Succeeded)
                | (EdgeCondition::OnFailure | EdgeCondition::Always, RunState::Failed)
        )
    }
}

/// Parse an enum field, naming the field in the error.
pub fn parse_enum<T: FromStr<Err = String>>(field: &str, s: &str) -> Result<T, FieldError> {
    s.parse::<T>().map_err(|m| FieldError::new(field, "unknown_variant", m))
}

/// A name unique within its tenant: 1-100 chars of letters, digits, `-`, `_`, `.`, starting with a letter or digit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Name(String);

impl Name {
    pub fn parse(field: &str, s: &str) -> Result<Name, FieldError> {
        let ok_start = s.chars().next().is_some_and(|c| c.is_ascii_alphanumeric());
        if s.is_empty() {
            return Err(FieldError::invalid(field, "must not be empty"));
        }
        if s.len() > 100 {
            return Err(FieldError::invalid(field, format!("is {} characters long; at most 100 are allowed", s.len())));
        }
        if !ok_start || !s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')) {
            return Err(FieldError::invalid(
                field,
                format!("`{s}` may use only letters, digits, `-`, `_` and `.`, and must start with a letter or digit"),
            ));
        }
        Ok(Name(s.to_string()))
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
    pub fn into_string(self) -> String {
        self.0
    }
}

/// An absolute `http` or `https` URL an executor listens on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookUrl(String);

impl WebhookUrl {
    pub fn parse(field: &str, s: &str) -> Result<WebhookUrl, FieldError> {
        let u = url::Url::parse(s).map_err(|e| FieldError::invalid(field, format!("`{s}` is not a valid URL: {e}")))?;
        if u.scheme() != "http" && u.scheme() != "https" {
            return Err(FieldError::invalid(field, format!("`{s}` must use http or https, not `{}`", u.scheme())));
        }
        if u.host_str().is_none_or(|h| h.is_empty()) {
            return Err(FieldError::invalid(field, format!("`{s}` has no host")));
        }
        // A password here would be stored, shown to every viewer and logged: refuse user info
        // outright, without echoing the URL.
        if !u.username().is_empty() || u.password().is_some() {
            return Err(FieldError::invalid(
                field,
                "must not contain user info (`user:password@`); executors authenticate calls by their signature",
            ));
        }
        if s.len() > 2000 {
            return Err(FieldError::invalid(field, "is longer than 2000 characters"));
        }
        Ok(WebhookUrl(u.to_string()))
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A bounded free-text field (descriptions, handler names).
pub fn bounded_text(field: &str, s: &str, max: usize) -> Result<String, FieldError> {
    if s.chars().count() > max {
        return Err(FieldError::invalid(field, format!("is longer than {max} characters")));
    }
    Ok(s.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enums_round_trip_and_name_their_choices() {
        for r in Route::ALL {
            assert_eq!(r.as_str().parse::<Route>().unwrap(), *r);
        }
        let e = parse_enum::<Route>("route", "randm").unwrap_err();
        assert_eq!(e.field, "route");
        assert!(e.message.contains("round_robin"), "{}", e.message);
    }

    #[test]
    fn names_and_urls_are_checked() {
        assert!(Name::parse("name", "billing-v2").is_ok());
        assert_eq!(Name::parse("name", "").unwrap_err().field, "name");
        assert!(Name::parse("name", "-x").is_err());
        assert!(Name::parse("name", "a b").is_err());
        assert!(WebhookUrl::parse("endpoints[0]", "https://example.com/hook").is_ok());
        let e = WebhookUrl::parse("endpoints[0]", "ftp://x").unwrap_err();
        assert!(e.message.contains("http"), "{}", e.message);
        assert!(WebhookUrl::parse("endpoints[0]", "not a url").is_err());
        for with_user in ["http://u:p@example.com/", "http://u@example.com/", "https://:secret@example.com/"] {
            let e = WebhookUrl::parse("endpoints[0]", with_user).unwrap_err();
            assert_eq!(e.field, "endpoints[0]");
            assert!(!e.message.contains("secret") && !e.message.contains("u:p"), "{}", e.message);
        }
    }
}
