//! Where Sundial's outbound calls may go: the operator's address policy (SSRF).
//!
//! Every call Sundial makes to an executor (deliveries, cancels) goes to an address a
//! tenant chose. Without a policy a tenant could aim it at the cloud metadata service or at
//! services on the scheduler's own network (XXL-JOB's CVE-2025-7787 was this class). The
//! rules, checked on the **resolved IP at connect time** (so a name that resolves to a
//! public address at registration and to an internal one later is still refused) and on IP
//! literals and `localhost` names at registration:
//!
//! - never: link-local (`169.254.0.0/16`, `fe80::/10`, which hold the cloud metadata
//!   services), the other metadata addresses (`100.100.100.200`, `fd00:ec2::254`),
//!   unspecified, multicast and broadcast addresses;
//! - loopback (`127.0.0.0/8`, `::1`) only with `allow_loopback`, **on by default**: a
//!   single-machine install and the quickstart run their executors on the same host, where
//!   loopback is the only address they have; a multi-tenant install sets it off;
//! - private ranges (`10/8`, `172.16/12`, `192.168/16`, `100.64/10`, `fc00::/7`) only with
//!   `allow_private`, **off by default**: turn it on when executors live on your private
//!   network.
//!
//! An IPv6 address that carries an IPv4 address is judged as that IPv4 address too, and
//! refused if either is: IPv4-mapped (`::ffff:a.b.c.d`), IPv4-translated
//! (`::ffff:0:a.b.c.d`), IPv4-compatible (`::a.b.c.d`), NAT64 (`64:ff9b::/96` and the
//! local-use `64:ff9b:1::/48`), 6to4 (`2002:AABB:CCDD::/48`) and Teredo (`2001:0::/32`: its
//! server and its obfuscated client address). A gateway on the path turns each of them into
//! a call to the IPv4 address it carries (`[64:ff9b::a9fe:a9fe]` is `169.254.169.254`).

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// What kind of address an IP is, for the policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddressClass {
    Public,
    Loopback,
    Private,
    /// Link-local and the cloud metadata services: never called.
    LinkLocalOrMetadata,
    /// Unspecified, multicast, broadcast: never called.
    NotUnicast,
}

/// The operator's outbound address policy (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutboundPolicy {
    pub allow_loopback: bool,
    pub allow_private: bool,
}

impl Default for OutboundPolicy {
    fn default() -> Self {
        Self { allow_loopback: true, allow_private: false }
    }
}

/// An address the policy refuses, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{ip} is {}", describe(*.class))]
pub struct Refused {
    pub ip: IpAddr,
    pub class: AddressClass,
}

fn describe(class: AddressClass) -> &'static str {
    match class {
        AddressClass::Loopback => {
            "a loopback address, refused by the outbound address policy (the operator may allow it: outbound_allow_loopback)"
        }
        AddressClass::Private => {
            "a private address, refused by the outbound address policy (the operator may allow private networks: outbound_allow_private)"
        }
        AddressClass::LinkLocalOrMetadata => {
            "a link-local or cloud metadata address: Sundial never calls those (outbound address policy)"
        }
        AddressClass::NotUnicast => "not a unicast address: Sundial never calls it (outbound address policy)",
        AddressClass::Public => "public",
    }
}

/// The class of an IP address: for an IPv6 address carrying IPv4 addresses, the most
/// restricted of its own class and theirs.
pub fn classify(ip: IpAddr) -> AddressClass {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return classify_v4(v4);
            }
            embedded_v4(v6).into_iter().flatten().map(classify_v4).fold(classify_v6(v6), stricter)
        }
    }
}

/// How restricted a class is: a higher rank is allowed by fewer policies.
fn rank(class: AddressClass) -> u8 {
    match class {
        AddressClass::Public => 0,
        AddressClass::Private => 1,
        AddressClass::Loopback => 2,
        AddressClass::LinkLocalOrMetadata => 3,
        AddressClass::NotUnicast => 4,
    }
}

fn stricter(a: AddressClass, b: AddressClass) -> AddressClass {
    if rank(b) > rank(a) { b } else { a }
}

/// The IPv4 addresses an IPv6 address carries, by the forms of RFC 4291 (compatible,
/// mapped), RFC 2765 (translated), RFC 6052 / RFC 8215 (NAT64), RFC 3056 (6to4) and
/// RFC 4380 (Teredo: server, and client with its bits inverted).
pub fn embedded_v4(ip: Ipv6Addr) -> [Option<Ipv4Addr>; 2] {
    let s = ip.segments();
    let v4 = |hi: u16, lo: u16| Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8);
    let last = v4(s[6], s[7]);
    match s {
        // ::a.b.c.d (compatible; `::` and `::1` are IPv6's own) and ::ffff:0:a.b.c.d (translated).
        [0, 0, 0, 0, 0, 0, hi, _] if hi != 0 => [Some(last), None],
        [0, 0, 0, 0, 0, 0, 0, lo] if lo > 1 => [Some(last), None],
        [0, 0, 0, 0, 0xffff, 0, _, _] | [0, 0, 0, 0, 0, 0xffff, _, _] => [Some(last), None],
        [0x64, 0xff9b, 0, 0, 0, 0, _, _] => [Some(last), None],
        // 64:ff9b:1::/48 (local-use NAT64, itself a private range): the common /96 layout.
        [0x64, 0xff9b, 1, _, _, _, _, _] => [Some(last), None],
        [0x2002, a, b, _, _, _, _, _] => [Some(v4(a, b)), None],
        [0x2001, 0, a, b, _, _, c, d] => [Some(v4(a, b)), Some(v4(!c, !d))],
        _ => [None, None],
    }
}

fn classify_v4(ip: Ipv4Addr) -> AddressClass {
    let o = ip.octets();
    if ip.is_unspecified() || ip.is_multicast() || ip.is_broadcast() || o[0] == 0 {
        AddressClass::NotUnicast
    } else if ip.is_link_local() || ip == Ipv4Addr::new(100, 100, 100, 200) {
        AddressClass::LinkLocalOrMetadata
    } else if ip.is_loopback() {
        AddressClass::Loopback
    } else if ip.is_private() || (o[0] == 100 && (o[1] & 0xc0) == 64) {
        AddressClass::Private
    } else {
        AddressClass::Public
    }
}

fn classify_v6(ip: Ipv6Addr) -> AddressClass {
    let s = ip.segments();
    if ip.is_unspecified() || ip.is_multicast() {
        AddressClass::NotUnicast
    } else if (s[0] & 0xffc0) == 0xfe80 || ip == Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254) {
        AddressClass::LinkLocalOrMetadata
    } else if ip.is_loopback() {
        AddressClass::Loopback
    } else if (s[0] & 0xfe00) == 0xfc00 || s[..3] == [0x64, 0xff9b, 1] {
        AddressClass::Private
    } else {
        AddressClass::Public
    }
}

impl OutboundPolicy {
    /// May Sundial connect to this address?
    pub fn check(&self, ip: IpAddr) -> Result<(), Refused> {
        let class = classify(ip);
        let allowed = match class {
            AddressClass::Public => true,
            AddressClass::Loopback => self.allow_loopback,
            AddressClass::Private => self.allow_private,
            AddressClass::LinkLocalOrMetadata | AddressClass::NotUnicast => false,
        };
        if allowed { Ok(()) } else { Err(Refused { ip, class }) }
    }

    /// What can be judged of a URL before any name is resolved: an IP literal host, or a
    /// `localhost` name (judged as loopback). Other names are judged when they resolve, at
    /// connect time.
    pub fn check_url(&self, url: &str) -> Result<(), Refused> {
        let Ok(u) = url::Url::parse(url) else { return Ok(()) };
        let ip = match u.host() {
            Some(url::Host::Ipv4(ip)) => IpAddr::V4(ip),
            Some(url::Host::Ipv6(ip)) => IpAddr::V6(ip),
            Some(url::Host::Domain(d)) => {
                let d = d.trim_end_matches('.').to_ascii_lowercase();
                if d == "localhost" || d.ends_with(".localhost") {
                    IpAddr::V4(Ipv4Addr::LOCALHOST)
                } else {
                    return Ok(());
                }
            }
            None => return Ok(()),
        };
        self.check(ip)
    }
}

impl fmt::Display for OutboundPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "public addresses{}{}; never link-local, metadata or non-unicast",
            if self.allow_loopback { ", loopback" } else { "" },
            if self.allow_private { ", private networks" } else { "" }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn addresses_are_classed_as_the_policy_needs() {
        for (a, c) in [
            ("93.184.216.34", AddressClass::Public),
            ("2606:4700::1111", AddressClass::Public),
            ("127.0.0.1", AddressClass::Loopback),
            ("127.8.9.10", AddressClass::Loopback),
            ("::1", AddressClass::Loopback),
            ("10.1.2.3", AddressClass::Private),
            ("172.16.0.1", AddressClass::Private),
            ("172.31.255.255", AddressClass::Private),
            ("172.32.0.1", AddressClass::Public),
            ("192.168.1.1", AddressClass::Private),
            ("100.64.0.1", AddressClass::Private),
            ("100.127.255.255", AddressClass::Private),
            ("100.128.0.1", AddressClass::Public),
            ("fd12:3456::1", AddressClass::Private),
            ("169.254.169.254", AddressClass::LinkLocalOrMetadata),
            ("169.254.0.1", AddressClass::LinkLocalOrMetadata),
            ("100.100.100.200", AddressClass::LinkLocalOrMetadata),
            ("fe80::1", AddressClass::LinkLocalOrMetadata),
            ("fd00:ec2::254", AddressClass::LinkLocalOrMetadata),
            ("::ffff:169.254.169.254", AddressClass::LinkLocalOrMetadata),
            ("::ffff:127.0.0.1", AddressClass::Loopback),
            ("2002:5db8:d822::1", AddressClass::Public),
            ("64:ff9b::5db8:d822", AddressClass::Public),
            ("0.0.0.0", AddressClass::NotUnicast),
            ("0.1.2.3", AddressClass::NotUnicast),
            ("::", AddressClass::NotUnicast),
            ("224.0.0.1", AddressClass::NotUnicast),
            ("255.255.255.255", AddressClass::NotUnicast),
            ("ff02::1", AddressClass::NotUnicast),
        ] {
            assert_eq!(classify(ip(a)), c, "{a}");
        }
    }

    /// IPv6 forms that carry an IPv4 address, from the SSRF literature (PayloadsAllTheThings,
    /// HackTricks, the NAT64/6to4/Teredo RFCs): each is judged as the address it carries.
    #[test]
    fn ipv6_forms_carrying_an_ipv4_address_are_judged_as_that_address() {
        use AddressClass::*;
        for (a, c) in [
            // 169.254.169.254, the cloud metadata service, in every form.
            ("::ffff:169.254.169.254", LinkLocalOrMetadata),
            ("::ffff:a9fe:a9fe", LinkLocalOrMetadata),
            ("0:0:0:0:0:ffff:a9fe:a9fe", LinkLocalOrMetadata),
            ("::169.254.169.254", LinkLocalOrMetadata),
            ("::a9fe:a9fe", LinkLocalOrMetadata),
            ("::ffff:0:169.254.169.254", LinkLocalOrMetadata),
            ("64:ff9b::a9fe:a9fe", LinkLocalOrMetadata),
            ("64:ff9b::169.254.169.254", LinkLocalOrMetadata),
            ("64:ff9b:1::a9fe:a9fe", LinkLocalOrMetadata),
            ("2002:a9fe:a9fe::", LinkLocalOrMetadata),
            ("2002:a9fe:a9fe:1234::1", LinkLocalOrMetadata),
            ("2001:0:a9fe:a9fe::1", LinkLocalOrMetadata),
            ("2001:0:4136:e378:8000:63bf:5601:5601", LinkLocalOrMetadata), // client ~a9fe:a9fe
            // Alibaba's metadata address.
            ("64:ff9b::6464:64c8", LinkLocalOrMetadata),
            ("2002:6464:64c8::", LinkLocalOrMetadata),
            // Loopback.
            ("::127.0.0.1", Loopback),
            ("::7f00:1", Loopback),
            ("64:ff9b::7f00:1", Loopback),
            ("2002:7f00:1::", Loopback),
            ("::ffff:0:7f00:1", Loopback),
            // Private networks.
            ("::10.0.0.1", Private),
            ("64:ff9b::a00:1", Private),
            ("64:ff9b::192.168.1.1", Private),
            ("2002:c0a8:101::1", Private),
            ("2001:0:4136:e378:8000:63bf:f5ff:fefe", Private), // client 10.0.1.1
            ("::ffff:100.64.0.1", Private),
            ("64:ff9b:1::5db8:d822", Private), // local-use NAT64 is a private range itself
            // Not unicast.
            ("::0.0.0.0", NotUnicast),
            ("64:ff9b::e000:1", NotUnicast),
            ("2002:ffff:ffff::", NotUnicast),
            // IPv6's own loopback and unspecified are not IPv4-compatible forms.
            ("::1", Loopback),
            ("::", NotUnicast),
        ] {
            assert_eq!(classify(ip(a)), c, "{a}");
        }
        let closed = OutboundPolicy { allow_loopback: false, allow_private: false };
        for url in [
            "http://[64:ff9b::a9fe:a9fe]/",
            "http://[::169.254.169.254]/",
            "http://[2002:a9fe:a9fe::]/",
            "http://[::127.0.0.1]:9101/",
            "http://[2001:0:4136:e378:8000:63bf:5601:5601]/",
        ] {
            assert!(closed.check_url(url).is_err(), "{url}");
        }
    }

    #[test]
    fn the_default_allows_public_and_loopback_only() {
        let p = OutboundPolicy::default();
        assert!(p.check(ip("93.184.216.34")).is_ok());
        assert!(p.check(ip("127.0.0.1")).is_ok());
        let e = p.check(ip("10.0.0.5")).unwrap_err();
        assert!(e.to_string().contains("outbound_allow_private"), "{e}");
        let e = p.check(ip("169.254.169.254")).unwrap_err();
        assert!(e.to_string().contains("never calls"), "{e}");
        let open = OutboundPolicy { allow_loopback: true, allow_private: true };
        assert!(open.check(ip("10.0.0.5")).is_ok());
        assert!(open.check(ip("169.254.169.254")).is_err(), "metadata is never allowed");
        let closed = OutboundPolicy { allow_loopback: false, allow_private: false };
        assert!(closed.check(ip("::1")).unwrap_err().to_string().contains("outbound_allow_loopback"));
    }

    #[test]
    fn urls_are_judged_by_their_ip_literal_or_localhost_name() {
        let closed = OutboundPolicy { allow_loopback: false, allow_private: false };
        assert!(closed.check_url("http://169.254.169.254/latest/meta-data/").is_err());
        assert!(closed.check_url("http://[::ffff:a9fe:a9fe]/").is_err());
        assert!(closed.check_url("http://localhost:9000/hook").is_err());
        assert!(closed.check_url("http://api.localhost./hook").is_err());
        assert!(closed.check_url("http://127.1:9000/").is_err(), "the URL parser normalises 127.1");
        assert!(closed.check_url("https://example.com/hook").is_ok(), "names are judged at connect time");
        assert!(OutboundPolicy::default().check_url("http://localhost:9000/hook").is_ok());
    }
}
