//! Wall-clock time as the console prints it (aria2's log prefixes, the results' dates): the
//! display's business, not the engine's.

fn tm_now() -> libc::tm {
    crate::engine::sys::local_time(None)
}

/// Local time as (month, day, hour, minute, second).
pub fn local_time() -> (i32, i32, i32, i32, i32) {
    let tm = tm_now();
    (tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec)
}

/// Local date and time for log files: `2026-11-29 21:33:06.092377`.
pub fn log_timestamp() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let t = now.as_secs() as libc::time_t;
    let tm = crate::engine::sys::local_time(Some(t));
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02}.{:06}",
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec,
        now.subsec_micros()
    )
}

/// Local time in C's `asctime` form without the newline: `Sun Nov 29 20:55:52 2026`.
pub fn asctime_now() -> String {
    const DAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let tm = tm_now();
    format!(
        "{} {} {:2} {:02}:{:02}:{:02} {}",
        DAYS[tm.tm_wday.rem_euclid(7) as usize],
        MONTHS[tm.tm_mon.rem_euclid(12) as usize],
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec,
        tm.tm_year + 1900
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn asctime_shape() {
        let s = asctime_now();
        assert_eq!(s.len(), 24, "{s}");
        assert_eq!(&s[3..4], " ");
        assert_eq!(&s[13..14], ":");
    }
}
