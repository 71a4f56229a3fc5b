//! aria2's number formats: abbreviated sizes (`1.5Mi`), durations (`1m59s`) and thousands separators.

/// aria2's `abbrevSize`: units "", Ki, Mi, Gi; a value of 922 or more moves to the next unit; values
/// under 10 get one decimal (the remainder ×10/1024, truncated); thousands separated by commas.
pub fn abbrev_size(size: u64) -> String {
    const UNITS: [&str; 4] = ["", "Ki", "Mi", "Gi"];
    let mut value = size;
    let mut rem = 0u64;
    let mut unit = 0;
    while unit < UNITS.len() - 1 && value >= 922 {
        rem = value % 1024;
        value /= 1024;
        unit += 1;
    }
    let mut out = with_commas(value);
    if unit > 0 && value < 10 {
        out.push('.');
        out.push_str(&(rem * 10 / 1024).to_string());
    }
    out.push_str(UNITS[unit]);
    out
}

/// Digits with comma thousands separators.
pub fn with_commas(v: u64) -> String {
    let s = v.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// aria2's `secfmt`: `1h`, `1h2m3s`, `1m59s`, `0s`.
pub fn secfmt(sec: u64) -> String {
    let (h, m, s) = (sec / 3600, sec % 3600 / 60, sec % 60);
    let mut out = String::new();
    if h > 0 {
        out.push_str(&format!("{h}h"));
    }
    if m > 0 {
        out.push_str(&format!("{m}m"));
    }
    if s > 0 || out.is_empty() {
        out.push_str(&format!("{s}s"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn abbrev_size_vectors() {
        assert_eq!(abbrev_size(0), "0");
        assert_eq!(abbrev_size(921), "921");
        assert_eq!(abbrev_size(1023), "0.9Ki");
        assert_eq!(abbrev_size(1024), "1.0Ki");
        assert_eq!(abbrev_size(1127), "1.1Ki");
        assert_eq!(abbrev_size(16384), "16Ki");
        assert_eq!(abbrev_size(1572864), "1.5Mi");
        assert_eq!(abbrev_size(3_000_000), "2.8Mi");
        assert_eq!(abbrev_size(u64::MAX), "17,179,869,183Gi");
        assert_eq!(abbrev_size(i64::MAX as u64), "8,589,934,591Gi");
    }

    #[test]
    fn secfmt_vectors() {
        assert_eq!(secfmt(0), "0s");
        assert_eq!(secfmt(1), "1s");
        assert_eq!(secfmt(119), "1m59s");
        assert_eq!(secfmt(3600), "1h");
        assert_eq!(secfmt(3599), "59m59s");
        assert_eq!(secfmt(3723), "1h2m3s");
        assert_eq!(secfmt(182), "3m2s");
    }
}
