//! Reads this process's memory figures from `/proc/self/status` (Linux), for the examples that
//! measure peak memory.

/// The field `key` (e.g. `"VmHWM:"`) in kB.
pub fn status_kb(key: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status (Linux)");
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("status field")
}
