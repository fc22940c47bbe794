//! The string formats an elicitation form checks (`email`, `uri`, `date`, `date-time`): plain
//! syntax checks, strict enough to catch a slip of the keyboard, without any I/O or lookup.

/// A string `format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextFormat {
    /// `email`.
    Email,
    /// `uri`.
    Uri,
    /// `date` (`YYYY-MM-DD`).
    Date,
    /// `date-time` (ISO 8601, `YYYY-MM-DDTHH:MM:SS` with an optional fraction and offset).
    DateTime,
}

fn digits(s: &str, n: usize) -> Option<u32> {
    (s.len() == n && s.bytes().all(|b| b.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
}

fn is_date(s: &str) -> bool {
    let mut parts = s.split('-');
    let (Some(y), Some(m), Some(d), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let (Some(y), Some(m), Some(d)) = (digits(y, 4), digits(m, 2), digits(d, 2)) else {
        return false;
    };
    let leap = y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&d)
}

fn is_time(s: &str) -> bool {
    let (clock, offset) = if let Some(c) = s.strip_suffix(['Z', 'z']) {
        (c, None)
    } else if let Some(i) = s.rfind(['+', '-']) {
        (&s[..i], Some(&s[i + 1..]))
    } else {
        return false;
    };
    if let Some(offset) = offset {
        let Some((h, m)) = offset.split_once(':') else {
            return false;
        };
        if digits(h, 2).is_none_or(|h| h >= 24) || digits(m, 2).is_none_or(|m| m >= 60) {
            return false;
        }
    }
    let (whole, fraction) = clock.split_once('.').unwrap_or((clock, "0"));
    if fraction.is_empty() || !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    let mut parts = whole.split(':');
    let (Some(h), Some(m), Some(sec), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    digits(h, 2).is_some_and(|h| h < 24)
        && digits(m, 2).is_some_and(|m| m < 60)
        && digits(sec, 2).is_some_and(|s| s <= 60)
}

pub(crate) fn format_matches(format: TextFormat, text: &str) -> bool {
    match format {
        TextFormat::Email => {
            let Some((local, domain)) = text.rsplit_once('@') else {
                return false;
            };
            !local.is_empty()
                && domain.contains('.')
                && !domain.starts_with('.')
                && !domain.ends_with('.')
                && !text.chars().any(|c| c.is_whitespace() || c.is_control())
        }
        TextFormat::Uri => {
            let Some((scheme, rest)) = text.split_once(':') else {
                return false;
            };
            let mut chars = scheme.chars();
            chars.next().is_some_and(|c| c.is_ascii_alphabetic())
                && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
                && !rest.is_empty()
                && !text.chars().any(|c| c.is_whitespace() || c.is_control())
        }
        TextFormat::Date => is_date(text),
        TextFormat::DateTime => text
            .split_once(['T', 't'])
            .is_some_and(|(date, time)| is_date(date) && is_time(time)),
    }
}
