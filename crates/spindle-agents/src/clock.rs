//! RFC 3339 timestamps (UTC, whole seconds) for install records and the registry cache, and the
//! age of one in words.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// `time` as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn rfc3339(time: SystemTime) -> String {
    let secs = time
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = civil_from_days(days as i64);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest / 60 % 60,
        rest % 60
    )
}

/// Reads what [`rfc3339`] writes (`Z` only, fractions ignored).
pub fn parse_rfc3339(text: &str) -> Option<SystemTime> {
    let b = text.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || !text.ends_with('Z') {
        return None;
    }
    let num = |range: std::ops::Range<usize>| text.get(range)?.parse::<u64>().ok();
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let days = days_from_civil(year as i64, month as u32, day as u32);
    let secs = u64::try_from(days).ok()? * 86_400 + hour * 3600 + minute * 60 + second;
    Some(UNIX_EPOCH + Duration::from_secs(secs))
}

/// An age in the largest whole unit: `40 s`, `12 min`, `3 h`, `5 days`.
pub fn age_in_words(age: Duration) -> String {
    let secs = age.as_secs();
    match secs {
        0..60 => format!("{secs} s"),
        60..3600 => format!("{} min", secs / 60),
        3600..86_400 => format!("{} h", secs / 3600),
        _ if secs < 2 * 86_400 => "1 day".to_owned(),
        _ => format!("{} days", secs / 86_400),
    }
}

// Howard Hinnant's civil-date algorithms (days since 1970-01-01 <-> proleptic Gregorian).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let yoe = year.rem_euclid(400);
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_round_trip() {
        for (secs, text) in [
            (0, "1970-01-01T00:00:00Z"),
            (951_782_400, "2000-02-29T00:00:00Z"),
            (1_795_910_399, "2026-11-28T23:59:59Z"),
        ] {
            let time = UNIX_EPOCH + Duration::from_secs(secs);
            assert_eq!(rfc3339(time), text);
            assert_eq!(parse_rfc3339(text), Some(time));
        }
        for bad in [
            "",
            "2026-13-01T00:00:00Z",
            "2026-11-28 10:00:00Z",
            "2026-11-28T10:00:00",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
    }

    #[test]
    fn ages_read_in_their_largest_unit() {
        for (secs, words) in [
            (5, "5 s"),
            (125, "2 min"),
            (3 * 3600 + 5, "3 h"),
            (90_000, "1 day"),
            (900_000, "10 days"),
        ] {
            assert_eq!(age_in_words(Duration::from_secs(secs)), words);
        }
    }
}
