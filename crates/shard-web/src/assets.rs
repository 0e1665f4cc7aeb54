//! The browser client: the plain ES modules and CSS of `web/`, embedded in the
//! binary so a release needs no files beside it, served under the door's strict CSP.
//! Embedded in every build (`debug-embed`) so no request does file I/O on the executor.

use axum::extract::Path;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

/// The files of `web/`; type declarations and editor configuration are not served.
#[derive(rust_embed::Embed)]
#[folder = "../../web/"]
#[exclude = "*.d.ts"]
#[exclude = "jsconfig.json"]
struct Client;

/// The media type of a served file, from its extension; unknown kinds are refused.
fn media_type(path: &str) -> Option<&'static str> {
    let ext = path.rsplit_once('.').map(|(_, e)| e)?;
    Some(match ext {
        "html" => "text/html; charset=utf-8",
        "js" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "ico" => "image/x-icon",
        _ => return None,
    })
}

fn serve(path: &str) -> Response {
    match (Client::get(path), media_type(path)) {
        // The embedded bytes are served as they are, never copied per request.
        (Some(file), Some(mt)) => ([(header::CONTENT_TYPE, mt)], file.data).into_response(),
        _ => crate::http::refuse(StatusCode::NOT_FOUND, "not found"),
    }
}

/// `GET /`: the client's page.
pub(crate) async fn index() -> Response {
    serve("index.html")
}

/// `GET /app/{path}`: the client's modules and styles.
pub(crate) async fn file(Path(path): Path<String>) -> Response {
    if path.split('/').any(|seg| seg.is_empty() || seg == "..") {
        return serve("");
    }
    serve(&path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_and_its_entry_module_are_embedded() {
        let page = Client::get("index.html").expect("index.html embedded");
        let page = String::from_utf8_lossy(&page.data);
        assert!(page.contains("/app/main.js"), "{page}");
        assert!(!page.contains("<script>"), "no inline script");
        assert!(!page.contains("style="), "no inline style");
        assert!(Client::get("main.js").is_some());
        assert!(
            Client::get("protocol.d.ts").is_none(),
            "types are not served"
        );
    }

    #[test]
    fn every_module_is_preloaded_by_the_page() {
        let page = Client::get("index.html").expect("index.html embedded");
        let page = String::from_utf8_lossy(&page.data).into_owned();
        for f in Client::iter().filter(|f| f.ends_with(".js") && f != "main.js") {
            assert!(
                page.contains(&format!("<link rel=\"modulepreload\" href=\"/app/{f}\">")),
                "{f} is not preloaded by index.html"
            );
        }
    }

    #[test]
    fn every_embedded_file_has_a_media_type() {
        for f in Client::iter() {
            assert!(media_type(&f).is_some(), "{f}");
        }
    }
}
