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
//! IPv4-mapped IPv6 addresses (`::ffff:a.b.c.d`) are judged as the IPv4 address they carry.

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

/// The class of an IP address.
pub fn classify(ip: IpAddr) -> AddressClass {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => classify_v4(v4),
            None => classify_v6(v6),
        },
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
    } else if (s[0] & 0xfe00) == 0xfc00 {
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
