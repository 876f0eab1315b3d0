//! The process metrics under the names the Prometheus client libraries give them
//! (`process_resident_memory_bytes`, `process_virtual_memory_bytes`,
//! `process_cpu_seconds_total`, `process_open_fds`, `process_max_fds`), so dashboards and
//! alert rules written for any other service work here unchanged. Read from `/proc/self` at
//! each scrape through the `procfs` crate: a few small reads, nothing kept between scrapes.
//! Where there is no `/proc` (other systems) or it cannot be read, the families are left out
//! rather than served as zero. `process_start_time_seconds` is written by the caller: it is
//! the service's start, which tests that run several services in one process tell apart.

use super::exposition::Exposition;

/// One reading of the process's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessFigures {
    pub resident_memory_bytes: u64,
    pub virtual_memory_bytes: u64,
    /// User and system CPU time.
    pub cpu_seconds: f64,
    pub open_fds: u64,
    /// The soft limit of open files; `None` when unlimited or unreadable.
    pub max_fds: Option<u64>,
}

impl ProcessFigures {
    /// The figures of this process now; `None` where they cannot be read.
    #[cfg(target_os = "linux")]
    pub fn read() -> Option<ProcessFigures> {
        use procfs::process::{LimitValue, Process};
        let process = Process::myself().ok()?;
        let stat = process.stat().ok()?;
        let max_fds = match process.limits().ok().map(|limits| limits.max_open_files.soft_limit) {
            Some(LimitValue::Value(limit)) => Some(limit),
            _ => None,
        };
        Some(ProcessFigures {
            resident_memory_bytes: stat.rss.saturating_mul(procfs::page_size()),
            virtual_memory_bytes: stat.vsize,
            cpu_seconds: (stat.utime + stat.stime) as f64 / procfs::ticks_per_second().max(1) as f64,
            open_fds: process.fd_count().ok()? as u64,
            max_fds,
        })
    }

    /// The figures of this process now; `None` where they cannot be read.
    #[cfg(not(target_os = "linux"))]
    pub fn read() -> Option<ProcessFigures> {
        None
    }

    pub fn render(&self, out: &mut Exposition) {
        let gauges = [
            ("process_resident_memory_bytes", "Resident memory size in bytes.", self.resident_memory_bytes),
            ("process_virtual_memory_bytes", "Virtual memory size in bytes.", self.virtual_memory_bytes),
            ("process_open_fds", "Number of open file descriptors.", self.open_fds),
        ];
        for (name, help, value) in gauges {
            out.family(name, "gauge", help);
            out.sample(name, &[], value);
        }
        let name = "process_cpu_seconds_total";
        out.family(name, "counter", "Total user and system CPU time spent in seconds.");
        out.sample(name, &[], self.cpu_seconds);
        if let Some(max) = self.max_fds {
            let name = "process_max_fds";
            out.family(name, "gauge", "Maximum number of open file descriptors.");
            out.sample(name, &[], max);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_is_read() {
        let figures = ProcessFigures::read().expect("/proc/self is readable");
        assert!(figures.resident_memory_bytes > 0 && figures.virtual_memory_bytes >= figures.resident_memory_bytes);
        assert!(figures.open_fds >= 3, "stdin, stdout, stderr at least: {figures:?}");
        assert!(figures.cpu_seconds >= 0.0);
    }

    #[test]
    fn the_families_are_written_under_the_client_libraries_names() {
        let figures = ProcessFigures {
            resident_memory_bytes: 4096,
            virtual_memory_bytes: 8192,
            cpu_seconds: 1.5,
            open_fds: 12,
            max_fds: Some(1024),
        };
        let mut out = Exposition::default();
        figures.render(&mut out);
        let text = out.into_text();
        for line in [
            "process_resident_memory_bytes 4096\n",
            "process_virtual_memory_bytes 8192\n",
            "process_open_fds 12\n",
            "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 1.5\n",
            "process_max_fds 1024\n",
        ] {
            assert!(text.contains(line), "{line:?} in {text}");
        }
    }
}
