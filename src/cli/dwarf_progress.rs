//! The progress line of a DWARF conversion that takes a while (a debug vmlinux: seconds): on
//! stderr, only when it is a terminal and `-q` is not given, and only once the conversion has
//! run for a second, so that a small input converts without a flicker. Cleared when done.
//! Nothing of it is made before a conversion tells its first step: an input read as BTF (the
//! main job) pays for none of it.

use btfgen::dwarf::Progress;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::path::Path;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::time::{Duration, Instant};

/// How long a conversion runs before its line is drawn.
const QUIET_FOR: Duration = Duration::from_secs(1);

/// The line of one input's conversion, made when the conversion first tells its progress;
/// told from either of the conversion's threads.
pub struct DwarfProgress<'p> {
    input: &'p Path,
    line: OnceLock<Line>,
}

struct Line {
    bar: ProgressBar,
    name: String,
    started: Instant,
    /// Whether the line may be drawn at all (a terminal, no `-q`).
    wanted: bool,
    shown: AtomicBool,
    /// The step last told (0: none yet), so that the message changes only with it.
    step: AtomicU8,
}

impl<'p> DwarfProgress<'p> {
    /// The line of converting the DWARF of `input`, not made yet.
    pub fn new(input: &'p Path) -> DwarfProgress<'p> {
        DwarfProgress {
            input,
            line: OnceLock::new(),
        }
    }

    /// Show `progress`.
    pub fn tell(&self, progress: Progress) {
        self.line
            .get_or_init(|| Line::new(self.input))
            .tell(progress);
    }
}

impl Line {
    /// A hidden line for `input`, its second counted from now.
    fn new(input: &Path) -> Line {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
        bar.set_style(
            ProgressStyle::with_template("{elapsed} {msg} [{bar:20}] {pos}/{len}")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
        );
        Line {
            bar,
            // The file's name only: the line stays within a terminal's width.
            name: input
                .file_name()
                .unwrap_or(input.as_os_str())
                .to_string_lossy()
                .into_owned(),
            started: Instant::now(),
            wanted: std::io::stderr().is_terminal() && !super::quiet(),
            shown: AtomicBool::new(false),
            step: AtomicU8::new(0),
        }
    }

    fn tell(&self, progress: Progress) {
        if self.wanted
            && !self.shown.load(Ordering::Relaxed)
            && self.started.elapsed() >= QUIET_FOR
            && !self.shown.swap(true, Ordering::Relaxed)
        {
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
        }
        let (step, what, position) = match progress {
            Progress::Numbered { done, total } => (1, "numbering types", Some((done, total))),
            Progress::Converted { done, total } => (2, "converting units", Some((done, total))),
            Progress::Deduplicating => (3, "deduplicating", None),
        };
        if self.step.swap(step, Ordering::Relaxed) != step {
            self.bar
                .set_message(format!("{}: DWARF: {what}", self.name));
        }
        if let Some((done, total)) = position {
            self.bar.set_length(total as u64);
            self.bar.set_position(done as u64);
        }
    }
}

impl Drop for Line {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}
