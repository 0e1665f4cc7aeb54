//! Terminal-safe text: whatever the model or a tool produced may carry
//! escape sequences that set the window title, write the clipboard (OSC 52), hide a
//! hyperlink target (OSC 8), clear the screen or move the cursor to overwrite what a person
//! is about to approve. Clients strip them before printing.
//!
//! Removed: CSI (`ESC [` … final byte, and C1 `0x9b`), OSC (`ESC ]` … BEL/ST, and `0x9d`),
//! DCS/SOS/PM/APC strings (`ESC P`, `ESC X`, `ESC ^`, `ESC _` … ST, and their C1 forms),
//! every other escape sequence, every other C0 control but newline and tab (carriage
//! return included: it lets a line overwrite itself), DEL, every C1 control, and the Unicode
//! bidirectional overrides and isolates (U+202A–U+202E, U+2066–U+2069), which reorder what
//! a terminal that implements bidi shows ("Trojan Source").
//!
//! [`Sanitizer`] is a streaming state machine: a sequence split across two deltas is still
//! removed whole.

/// Where the state machine is inside an escape sequence.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum State {
    /// Plain text.
    #[default]
    Text,
    /// After ESC.
    Escape,
    /// After ESC and intermediate bytes (0x20–0x2f): waiting for the final byte.
    EscapeIntermediate,
    /// Inside a CSI: parameters and intermediates until a final byte 0x40–0x7e.
    Csi,
    /// Inside an OSC: until BEL or ST.
    Osc,
    /// Inside a DCS/SOS/PM/APC string: until ST.
    String,
    /// ESC seen inside an OSC or string: `\` ends it (ST).
    StringEscape,
}

/// A streaming stripper of terminal control sequences.
#[derive(Debug, Clone, Default)]
pub struct Sanitizer {
    state: State,
}

impl Sanitizer {
    /// A sanitizer in the plain-text state.
    pub fn new() -> Self {
        Sanitizer::default()
    }

    /// Forgets a sequence left open (at the end of a block): what follows is text again.
    pub fn reset(&mut self) {
        self.state = State::Text;
    }

    /// The printable part of `input`, continuing any sequence an earlier call left open.
    pub fn push(&mut self, input: &str) -> String {
        let mut out = String::with_capacity(input.len());
        for c in input.chars() {
            self.step(c, &mut out);
        }
        out
    }

    fn step(&mut self, c: char, out: &mut String) {
        let code = c as u32;
        self.state = match self.state {
            State::Text => match code {
                0x1b => State::Escape,
                0x9b => State::Csi,
                0x9d => State::Osc,
                0x90 | 0x98 | 0x9e | 0x9f => State::String,
                0x0a | 0x09 => {
                    out.push(c);
                    State::Text
                }
                0x00..=0x1f | 0x7f..=0x9f => State::Text,
                0x202a..=0x202e | 0x2066..=0x2069 => State::Text,
                _ => {
                    out.push(c);
                    State::Text
                }
            },
            State::Escape => match c {
                '[' => State::Csi,
                ']' => State::Osc,
                'P' | 'X' | '^' | '_' => State::String,
                '\u{1b}' => State::Escape,
                ' '..='/' => State::EscapeIntermediate,
                // Any other byte ends a two-byte escape; a control ends it and is dropped.
                _ => State::Text,
            },
            State::EscapeIntermediate => match c {
                ' '..='/' => State::EscapeIntermediate,
                '\u{1b}' => State::Escape,
                _ => State::Text,
            },
            State::Csi => match code {
                0x40..=0x7e => State::Text,
                0x1b => State::Escape,
                // Parameters, intermediates and stray controls stay inside the sequence.
                _ => State::Csi,
            },
            State::Osc => match code {
                0x07 | 0x9c => State::Text,
                0x1b => State::StringEscape,
                _ => State::Osc,
            },
            State::String => match code {
                0x9c => State::Text,
                0x1b => State::StringEscape,
                _ => State::String,
            },
            State::StringEscape => match c {
                '\\' => State::Text,
                // An ESC that does not form ST starts a new sequence (xterm does the same).
                '[' => State::Csi,
                ']' => State::Osc,
                'P' | 'X' | '^' | '_' => State::String,
                _ => State::Text,
            },
        };
    }
}

fn is_bidi_control(c: char) -> bool {
    matches!(c as u32, 0x202a..=0x202e | 0x2066..=0x2069)
}

/// `text` without terminal control sequences (one-shot form of [`Sanitizer`]).
pub fn strip(text: &str) -> String {
    let clean = text
        .chars()
        .all(|c| c == '\n' || c == '\t' || !(c.is_control() || is_bidi_control(c)));
    if clean {
        return text.to_string();
    }
    Sanitizer::new().push(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_newlines_and_tabs_pass() {
        assert_eq!(strip("a\tb\nc — ü 🚀"), "a\tb\nc — ü 🚀");
    }

    #[test]
    fn csi_sequences_are_removed() {
        assert_eq!(strip("a\x1b[2Jb\x1b[31;1mred\x1b[0m"), "abred");
        assert_eq!(strip("x\x1b[?25ly"), "xy");
        assert_eq!(strip("x\u{9b}2Jy"), "xy");
    }

    #[test]
    fn osc_title_clipboard_and_hyperlinks_are_removed() {
        assert_eq!(strip("a\x1b]0;evil title\x07b"), "ab");
        assert_eq!(strip("a\x1b]52;c;cm0gLXJmIH4=\x07b"), "ab");
        assert_eq!(
            strip("\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\"),
            "click"
        );
        assert_eq!(strip("a\u{9d}0;t\u{9c}b"), "ab");
    }

    #[test]
    fn dcs_and_other_strings_are_removed() {
        assert_eq!(strip("a\x1bPq#0;2;0;0;0\x1b\\b"), "ab");
        assert_eq!(
            strip("a\x1b_apc\x1b\\b\x1b^pm\x1b\\c\x1bXsos\x1b\\d"),
            "abcd"
        );
        assert_eq!(strip("a\u{90}dcs\u{9c}b"), "ab");
    }

    #[test]
    fn other_controls_are_removed() {
        assert_eq!(strip("a\rb\x08c\x00d\x7fe\u{85}f\x07g"), "abcdefg");
        assert_eq!(strip("line\r\n"), "line\n");
        assert_eq!(strip("a\x1bcb\x1b(Bc\x1b7d"), "abcd");
    }

    #[test]
    fn bidi_overrides_are_removed() {
        assert_eq!(strip("rm \u{202e}txt.exe"), "rm txt.exe");
        assert_eq!(strip("a\u{2066}b\u{2069}c"), "abc");
    }

    #[test]
    fn a_sequence_split_across_pushes_is_removed_whole() {
        let input = "ok \x1b]52;c;aGVsbG8=\x07 and \x1b[2J done \x1bPdata\x1b\\!";
        let whole = strip(input);
        assert_eq!(whole, "ok  and  done !");
        let chars: Vec<char> = input.chars().collect();
        for cut in 0..=chars.len() {
            let (a, b): (String, String) =
                (chars[..cut].iter().collect(), chars[cut..].iter().collect());
            let mut s = Sanitizer::new();
            let got = s.push(&a) + &s.push(&b);
            assert_eq!(got, whole, "cut at {cut}");
        }
    }

    #[test]
    fn an_unterminated_sequence_swallows_only_until_reset() {
        let mut s = Sanitizer::new();
        assert_eq!(s.push("a\x1b]0;never ends"), "a");
        s.reset();
        assert_eq!(s.push("b"), "b");
    }
}
