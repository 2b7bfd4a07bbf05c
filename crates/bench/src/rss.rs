//! Resident set size of the current process, from `/proc/self/status` (Linux).

/// Read a `kB` field such as `VmHWM` or `VmRSS` from `/proc/self/status`, in bytes.
/// `None` where procfs is unavailable (the table then shows `?`).
pub fn status_bytes(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status.lines().find_map(|line| {
        let rest = line.strip_prefix(field)?.strip_prefix(':')?;
        let kib: u64 = rest.trim().strip_suffix("kB")?.trim().parse().ok()?;
        Some(kib * 1024)
    })
}

/// Peak resident set size so far (`VmHWM`).
pub fn peak_bytes() -> Option<u64> {
    status_bytes("VmHWM")
}

/// Current resident set size (`VmRSS`).
pub fn current_bytes() -> Option<u64> {
    status_bytes("VmRSS")
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_own_status() {
        if std::path::Path::new("/proc/self/status").exists() {
            // Current first: other tests run in this process, and the peak only grows.
            let now = super::current_bytes().expect("VmRSS in /proc/self/status");
            let peak = super::peak_bytes().expect("VmHWM in /proc/self/status");
            assert!(peak >= now && now > 0);
        }
    }
}
