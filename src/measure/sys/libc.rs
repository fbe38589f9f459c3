//! Which C library this process runs on, asked of the library itself.

/// `("glibc", Some("2.36"))`, `("musl", None)` (musl has no version call), ...
pub fn own_libc() -> (&'static str, Option<String>) {
    #[cfg(target_env = "gnu")]
    {
        // SAFETY: gnu_get_libc_version returns a pointer to a static,
        // NUL-terminated string that lives as long as the process.
        let version = unsafe { std::ffi::CStr::from_ptr(libc::gnu_get_libc_version()) };
        ("glibc", Some(version.to_string_lossy().into_owned()))
    }
    #[cfg(target_env = "musl")]
    {
        ("musl", None)
    }
    #[cfg(not(any(target_env = "gnu", target_env = "musl")))]
    {
        ("unknown", None)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_the_libc() {
        let (name, version) = super::own_libc();
        if cfg!(target_env = "gnu") {
            assert_eq!(name, "glibc");
            let v = version.unwrap();
            assert!(v.starts_with("2."), "{v}");
        }
    }
}
