//! Failed token attempts, counted per address, so a token cannot be guessed at network speed.
//!
//! Sans-I/O: the caller passes the time. An address (an IPv6 address by its /64, which one host
//! usually holds whole) may fail [`AttemptLimits::failures`] times per
//! [`AttemptLimits::window`]; after that every request from it is refused with 429 until the
//! window ends, whatever token it carries. A success does not reset the count: a guesser who
//! also holds one valid token gains nothing. The table is bounded: when full, windows that have
//! ended are dropped, and if none has, the oldest is.

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::{Duration, Instant};

/// How many failures an address may have, and over how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttemptLimits {
    /// Failures allowed per window.
    pub failures: u32,
    /// The window, from an address's first failure.
    pub window: Duration,
    /// Addresses tracked at most.
    pub addresses: usize,
}

impl Default for AttemptLimits {
    fn default() -> AttemptLimits {
        AttemptLimits {
            failures: 10,
            window: Duration::from_secs(60),
            addresses: 10_000,
        }
    }
}

/// The failure counts of one server.
#[derive(Debug)]
pub struct FailedAttempts {
    limits: AttemptLimits,
    by_address: HashMap<IpAddr, (Instant, u32)>,
}

/// The part of an address that counts: IPv4 whole, IPv6 by its /64 (an IPv4-mapped address as
/// its IPv4).
fn bucket(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V4(v4) => IpAddr::V4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let mut segments = v6.segments();
                segments[4..].fill(0);
                IpAddr::V6(segments.into())
            }
        },
    }
}

impl FailedAttempts {
    /// An empty table.
    pub fn new(limits: AttemptLimits) -> FailedAttempts {
        FailedAttempts {
            limits,
            by_address: HashMap::new(),
        }
    }

    /// `Err(wait)` while `address` is refused: how long until its window ends.
    pub fn check(&self, address: IpAddr, now: Instant) -> Result<(), Duration> {
        match self.by_address.get(&bucket(address)) {
            Some(&(start, count)) if count >= self.limits.failures => {
                let ends = start + self.limits.window;
                if now < ends { Err(ends - now) } else { Ok(()) }
            }
            _ => Ok(()),
        }
    }

    /// Counts one failure of `address`.
    pub fn failed(&mut self, address: IpAddr, now: Instant) {
        let key = bucket(address);
        let window = self.limits.window;
        if !self.by_address.contains_key(&key) && self.by_address.len() >= self.limits.addresses {
            self.by_address
                .retain(|_, (start, _)| now.saturating_duration_since(*start) < window);
            if self.by_address.len() >= self.limits.addresses
                && let Some(oldest) = self
                    .by_address
                    .iter()
                    .min_by_key(|(_, (start, _))| *start)
                    .map(|(address, _)| *address)
            {
                self.by_address.remove(&oldest);
            }
        }
        let entry = self.by_address.entry(key).or_insert((now, 0));
        if now.saturating_duration_since(entry.0) >= window {
            *entry = (now, 0);
        }
        entry.1 = entry.1.saturating_add(1);
    }

    /// Addresses tracked now.
    pub fn tracked(&self) -> usize {
        self.by_address.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> AttemptLimits {
        AttemptLimits {
            failures: 3,
            window: Duration::from_secs(60),
            addresses: 4,
        }
    }

    #[test]
    fn an_address_is_refused_after_its_failures_until_the_window_ends() {
        let start = Instant::now();
        let mut attempts = FailedAttempts::new(limits());
        let guesser: IpAddr = "203.0.113.7".parse().unwrap();
        let other: IpAddr = "203.0.113.8".parse().unwrap();
        for n in 0..3 {
            assert_eq!(attempts.check(guesser, start), Ok(()), "failure {n}");
            attempts.failed(guesser, start + Duration::from_secs(n));
        }
        assert_eq!(
            attempts.check(guesser, start + Duration::from_secs(10)),
            Err(Duration::from_secs(50))
        );
        assert_eq!(attempts.check(other, start), Ok(()));
        assert_eq!(
            attempts.check(guesser, start + Duration::from_secs(60)),
            Ok(())
        );
        // A new window starts from the next failure.
        attempts.failed(guesser, start + Duration::from_secs(61));
        assert_eq!(
            attempts.check(guesser, start + Duration::from_secs(61)),
            Ok(())
        );
    }

    #[test]
    fn ipv6_counts_by_its_64_and_a_mapped_ipv4_as_itself() {
        let start = Instant::now();
        let mut attempts = FailedAttempts::new(limits());
        for host in [
            "2001:db8:1:2::1",
            "2001:db8:1:2::ffff",
            "2001:db8:1:2:abcd::9",
        ] {
            attempts.failed(host.parse().unwrap(), start);
        }
        assert!(
            attempts
                .check("2001:db8:1:2::42".parse().unwrap(), start)
                .is_err()
        );
        assert!(
            attempts
                .check("2001:db8:1:3::1".parse().unwrap(), start)
                .is_ok()
        );
        for _ in 0..3 {
            attempts.failed("::ffff:198.51.100.1".parse().unwrap(), start);
        }
        assert!(
            attempts
                .check("198.51.100.1".parse().unwrap(), start)
                .is_err()
        );
    }

    #[test]
    fn the_table_stays_bounded_dropping_ended_windows_first_then_the_oldest() {
        let start = Instant::now();
        let mut attempts = FailedAttempts::new(limits());
        for n in 0..4u8 {
            attempts.failed(
                IpAddr::from([10, 0, 0, n]),
                start + Duration::from_secs(n.into()),
            );
        }
        assert_eq!(attempts.tracked(), 4);
        // All windows still running: the oldest (10.0.0.0) goes.
        attempts.failed(IpAddr::from([10, 0, 1, 0]), start + Duration::from_secs(5));
        assert_eq!(attempts.tracked(), 4);
        for _ in 0..3 {
            attempts.failed(IpAddr::from([10, 0, 0, 1]), start + Duration::from_secs(6));
        }
        assert!(
            attempts
                .check(IpAddr::from([10, 0, 0, 1]), start + Duration::from_secs(6))
                .is_err()
        );
        // Later, every window has ended: they are all dropped before a new one is added.
        attempts.failed(
            IpAddr::from([10, 0, 2, 0]),
            start + Duration::from_secs(200),
        );
        assert_eq!(attempts.tracked(), 1);
    }
}
