//! Process settings made before anything else runs: the allocator's and the open-files limit.

/// mimalloc asks the kernel for transparent huge pages on its arenas. Where THP is on (even
/// in `madvise` mode), a partly used 2 MiB page is resident whole: 10,000 held requests cost
/// about 100 MB more (`cargo xtask bench --scenario waiting-flows`: 433 MB, 334 MB without).
/// Nothing the service does gains measurably from huge pages.
#[cfg(target_os = "linux")]
fn without_transparent_huge_pages() {
    // SAFETY: prctl(PR_SET_THP_DISABLE) takes plain integers and sets a flag of this process.
    if unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) } != 0 {
        eprintln!("warning: transparent huge pages stay on: {}", std::io::Error::last_os_error());
    }
}

#[cfg(not(target_os = "linux"))]
fn without_transparent_huge_pages() {}

/// mimalloc's `purge_delay` option (index 15 of `mi_option_t` in mimalloc.h, v2 and v3 alike;
/// the crate names no constant for it).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// How long mimalloc keeps memory it no longer uses before handing it back to the kernel:
/// mimalloc v2's default. v3's is a second, long enough for a burst of connections to find the
/// memory of the previous burst's requests still resident (`cargo xtask bench --scenario
/// waiting-flows`: 10,000 held calls peaked at 302 MB, 293 MB with this; the idle service at
/// 40 MB, 32 MB with this; no throughput change measurable in the other scenarios).
const ALLOCATOR_PURGE_DELAY_MS: std::ffi::c_long = 10;

/// Raises the soft limit on open files to the hard one: each client connection holds one, and
/// distributions start processes at 1,024. The figure reached, for the log.
#[cfg(unix)]
pub(super) fn raise_open_files_limit() -> std::io::Result<u64> {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit and setrlimit read and write the plain struct passed by pointer.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max;
            if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
    }
    Ok(limit.rlim_cur)
}

pub(super) fn tune_allocator() {
    without_transparent_huge_pages();
    // SAFETY: mi_option_set takes an option index and a plain integer; options may be set at
    // any time.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, ALLOCATOR_PURGE_DELAY_MS) };
}
