//! The enrollment page the door serves beside the client (`assets`). No inline script:
//! the CSP is `default-src 'self'`.

/// `GET /enroll`: posts the code from the URL's fragment (never sent to a server) and keeps
/// the session key it gets back in `localStorage` (docs/web.md, "The credential").
pub const ENROLL: &str = r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Shard: enroll this browser</title>
<script src="/enroll.js" defer></script></head>
<body><h1>Shard</h1><p id="status">Enrolling this browser…</p></body></html>
"#;

/// The enrollment script.
pub const ENROLL_JS: &str = r#""use strict";
(async () => {
  const status = document.getElementById("status");
  const code = location.hash.slice(1);
  // The code leaves the address bar and the history at once.
  history.replaceState(null, "", location.pathname);
  if (!code) { status.textContent = "No enrollment code in this link; run `shard web` again."; return; }
  try {
    const r = await fetch("/enroll", {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ code }),
    });
    if (r.ok) {
      const j = await r.json();
      // The session key stays in this Origin's storage (scheme, host and port): a page
      // served on another port gets the cookie too, but never this key.
      try {
        localStorage.setItem("shard.session_key", j.session_key);
      } catch (e) {
        status.textContent = "This browser keeps no site storage for this page; Shard needs it to stay enrolled.";
        return;
      }
      status.textContent = "This browser is enrolled as " + j.principal_id + ".";
      location.replace("/");
    } else if (r.status === 429) {
      status.textContent = "Too many failed attempts; wait a minute and run `shard web` again.";
    } else {
      status.textContent = "This link is used or expired; run `shard web` again.";
    }
  } catch (e) {
    status.textContent = "The daemon could not be reached.";
  }
})();
"#;
