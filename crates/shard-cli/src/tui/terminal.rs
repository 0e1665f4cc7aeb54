//! The terminal guard: puts the terminal in the client's state (raw mode, alternate
//! screen, mouse reporting, bracketed paste, disambiguated keys) and always puts it back —
//! on drop, from the panic hook, and on SIGTERM/SIGINT/SIGHUP (the event loop turns those
//! into a normal exit). Restoring twice is harmless: a flag makes it idempotent.

use std::io::{Stdout, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use crossterm::event::{
    DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture,
    KeyboardEnhancementFlags, PopKeyboardEnhancementFlags, PushKeyboardEnhancementFlags,
};
use crossterm::execute;
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;

/// The terminal is in the client's state.
static ACTIVE: AtomicBool = AtomicBool::new(false);
/// Keyboard enhancement flags were pushed and must be popped.
static ENHANCED: AtomicBool = AtomicBool::new(false);

/// The ratatui terminal the client draws on.
pub type Term = Terminal<CrosstermBackend<Stdout>>;

/// Owns the terminal's client state; restores it when dropped.
pub struct Guard;

impl Guard {
    /// Enters the client's terminal state and returns the drawing terminal.
    pub fn enter() -> anyhow::Result<(Guard, Term)> {
        install_panic_hook();
        enter_state()?;
        let terminal = Terminal::new(CrosstermBackend::new(std::io::stdout()))?;
        Ok((Guard, terminal))
    }

    /// Leaves the client's state for a while (to run `$EDITOR`).
    pub fn suspend(&self) {
        restore();
    }

    /// Comes back after [`Guard::suspend`].
    pub fn resume(&self, term: &mut Term) -> anyhow::Result<()> {
        enter_state()?;
        term.clear()?;
        Ok(())
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        restore();
    }
}

fn enter_state() -> anyhow::Result<()> {
    enable_raw_mode()?;
    ACTIVE.store(true, Ordering::SeqCst);
    let mut out = std::io::stdout();
    execute!(
        out,
        EnterAlternateScreen,
        EnableMouseCapture,
        EnableBracketedPaste
    )?;
    // Terminals speaking the kitty keyboard protocol tell Shift+Enter and Ctrl+Enter
    // from Enter; elsewhere Ctrl+J and Alt+Enter are the documented fallbacks.
    if matches!(
        crossterm::terminal::supports_keyboard_enhancement(),
        Ok(true)
    ) {
        let flags = KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES;
        if execute!(out, PushKeyboardEnhancementFlags(flags)).is_ok() {
            ENHANCED.store(true, Ordering::SeqCst);
        }
    }
    Ok(())
}

/// Puts the terminal back: keyboard flags, bracketed paste, mouse reporting, the main
/// screen, the cursor, then termios. Safe to call at any time, any number of times.
pub fn restore() {
    if !ACTIVE.swap(false, Ordering::SeqCst) {
        return;
    }
    let mut out = std::io::stdout();
    if ENHANCED.swap(false, Ordering::SeqCst) {
        let _ = execute!(out, PopKeyboardEnhancementFlags);
    }
    let _ = execute!(
        out,
        DisableBracketedPaste,
        DisableMouseCapture,
        LeaveAlternateScreen,
        crossterm::cursor::Show
    );
    let _ = disable_raw_mode();
    let _ = out.flush();
}

fn install_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            // The message must land on the main screen, in cooked mode, to be read.
            restore();
            previous(info);
        }));
    });
}
