//! libbpf's logging API: the printer `libbpf_set_print()` installs, which receives the
//! library's log ([`crate::log`]) as libbpf's own messages, one `libbpf: ...\n` line per call,
//! passed as `("%s", line)`. The va_list calls live in `print.c`.

use super::errno::Errno;
use crate::fallible::StringSink;
use alloc::string::String;
use core::ffi::{c_char, c_int, c_void};
use core::fmt::Write;
use std::sync::{Mutex, Once};

/// libbpf's `libbpf_print_fn_t`: `int (*)(enum libbpf_print_level, const char *, va_list)`.
/// The header declares it with its real `va_list` (cbindgen.toml); Rust never calls it itself,
/// so the `va_list` is an opaque pointer-sized argument here.
#[allow(non_camel_case_types)]
pub type libbpf_print_fn_t =
    Option<unsafe extern "C" fn(level: c_int, format: *const c_char, args: *mut c_void) -> c_int>;

/// libbpf's `enum libbpf_print_level` values.
const LIBBPF_WARN: c_int = 0;
const LIBBPF_INFO: c_int = 1;
const LIBBPF_DEBUG: c_int = 2;

unsafe extern "C" {
    /// libbpf's default printer (`print.c`): WARN and INFO to stderr, DEBUG dropped.
    fn btfgen_print_default(level: c_int, format: *const c_char, args: *mut c_void) -> c_int;
    /// Calls `print(level, format, <the variadic arguments as a va_list>)` (`print.c`).
    fn btfgen_print_call(
        print: unsafe extern "C" fn(c_int, *const c_char, *mut c_void) -> c_int,
        level: c_int,
        format: *const c_char,
        ...
    ) -> c_int;
}

/// The printer `libbpf_set_print()` installed.
#[derive(Clone, Copy)]
enum Printer {
    /// libbpf's default (not yet replaced): debug messages are not even formatted.
    Default,
    /// The caller's callback; `None` prints nothing.
    Callback(libbpf_print_fn_t),
}

static PRINTER: Mutex<Printer> = Mutex::new(Printer::Default);

fn printer() -> Printer {
    *PRINTER
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Make `print` the printer (NULL: none) and return the previous one, libbpf's default as
/// `btfgen_print_default` (`libbpf_set_print()`).
pub(super) fn replace_printer(print: libbpf_print_fn_t) -> libbpf_print_fn_t {
    let mut current = PRINTER
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let previous = match *current {
        Printer::Default => Some(btfgen_print_default as _),
        Printer::Callback(print) => print,
    };
    *current = Printer::Callback(print);
    previous
}

/// Forwards [`crate::log`]'s messages to the installed printer.
struct CPrinter;

impl log::Log for CPrinter {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        metadata.target() == crate::log::TARGET
            && match printer() {
                Printer::Default => metadata.level() <= log::Level::Info,
                Printer::Callback(print) => print.is_some(),
            }
    }

    fn log(&self, record: &log::Record<'_>) {
        let print = match printer() {
            Printer::Default if record.level() <= log::Level::Info => btfgen_print_default,
            Printer::Callback(Some(print)) => print,
            _ => return,
        };
        if record.target() != crate::log::TARGET {
            return;
        }
        let level = match record.level() {
            log::Level::Error | log::Level::Warn => LIBBPF_WARN,
            log::Level::Info => LIBBPF_INFO,
            log::Level::Debug | log::Level::Trace => LIBBPF_DEBUG,
        };
        let mut line = String::new();
        let mut sink = StringSink::new(&mut line);
        // Out of memory: the message is dropped, as libbpf drops what it cannot print.
        if write!(sink, "{}{}\n\0", crate::log::PREFIX, record.args()).is_err()
            || sink.finish().is_err()
        {
            return;
        }
        // SAFETY: `print` is the caller's `libbpf_print_fn_t` (or the default printer), called
        // as libbpf calls it: a level, a format string, and the arguments it names, here one
        // NUL-terminated string that lives until the call returns.
        unsafe { btfgen_print_call(print, level, c"%s".as_ptr(), line.as_ptr().cast::<c_char>()) };
    }

    fn flush(&self) {}
}

/// Route [`crate::log`] to the installed printer; every entry point calls this first. A Rust
/// program that set its own `log` logger before keeps it (and gets the messages instead).
pub(super) fn install() {
    static INSTALL: Once = Once::new();
    static LOGGER: CPrinter = CPrinter;
    INSTALL.call_once(|| {
        if log::set_logger(&LOGGER).is_ok() {
            log::set_max_level(log::LevelFilter::Debug);
        }
    });
}

/// Warn, as libbpf does, that `what` `name` was rejected; the error passes through.
pub(super) fn warn_rejected<E: core::fmt::Display + Into<Errno>>(
    what: &'static str,
    name: &dyn core::fmt::Display,
) -> impl FnOnce(E) -> Errno {
    move |e| {
        crate::log::bad_input(what, name, &e);
        e.into()
    }
}
