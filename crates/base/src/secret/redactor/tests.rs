//! The redactor's tests (`redactor.rs`): every form of a secret it must find (plain, base64, percent-encoded, URL credentials) and what it must leave as it is.

use super::*;

/// Issue 43, item 8: a restart command's stderr holding the base64 of
/// the token (or of a text around it) kept it readable.
#[test]
fn the_token_in_any_base64_text_is_redacted() {
    let token = "tok-3f9a8b7c6d5e4f30";
    let r = Redactor::new([token]);
    for around in [
        token.to_string(),
        format!("Bearer {token}"),
        format!("user:{token}"),
        format!("ab{token}xyz"),
        format!("{{\"token\":\"{token}\"}}"),
    ] {
        for encoded in [base64(around.as_bytes()), {
            base64(around.as_bytes())
                .replace('+', "-")
                .replace('/', "_")
        }] {
            let line = format!("stderr: {encoded} done");
            let redacted = r.redact(&line);
            assert!(
                redacted.contains(REDACTED),
                "{around}: {line} -> {redacted}"
            );
            // What is left cannot give the token back.
            let left: String = redacted.replace(REDACTED, "");
            assert!(!left.contains(&base64(token.as_bytes())[..8]), "{redacted}");
        }
    }
    // A short secret's base64 is not hunted inside other text.
    assert!(Redactor::new(["abcd"])
        .redact("YWJjZA== x")
        .contains(REDACTED));
    assert_eq!(Redactor::new(["abcd"]).redact("QWJjZGVm"), "QWJjZGVm");
}

#[test]
fn a_redactor_finds_every_form_of_a_secret() {
    let r = Redactor::new(["s3cr<e>t\"x"]);
    let json = serde_json::to_string("a s3cr<e>t\"x b").unwrap();
    assert_eq!(json, "\"a s3cr<e>t\\\"x b\"");
    assert!(!r.redact(&json).contains("s3cr"), "{}", r.redact(&json));
    assert!(!r.redact("a s3cr&lt;e&gt;t&quot;x").contains("s3cr"));
    assert!(!r.redact("?t=s3cr%3Ce%3Et%22x").contains("s3cr"));
    assert_eq!(r.redact("nothing here"), "nothing here");
    // Too short to redact without destroying the text.
    assert_eq!(Redactor::new(["ab", "  "]).redact("a b ab"), "a b ab");
}

#[test]
fn json_keys_and_structure_are_never_rewritten() {
    // Secrets equal to the report's own words: field names, an enum value.
    let r = Redactor::new(["durationMs", "verdict", "phases"]);
    let mut value = serde_json::json!({
        "verdict": "pass",
        "durationMs": 12,
        "phases": [{"reason": "took durationMs", "verdict": "verdict"}],
    });
    r.redact_json(&mut value);
    assert_eq!(
        value,
        serde_json::json!({
            "verdict": "pass",
            "durationMs": 12,
            "phases": [{"reason": "took [redacted]", "verdict": "[redacted]"}],
        })
    );
}

#[test]
fn a_token_percent_encoded_with_its_slashes_left_as_they_are_is_redacted() {
    let r = Redactor::new(["ab/cd+ef=gh:1"]);
    for encoded in [
        "ab%2Fcd%2Bef%3Dgh%3A1",
        "ab%2fcd%2bef%3dgh%3a1",
        "ab/cd+ef=gh:1",
        "ab/cd%2Bef%3Dgh%3A1",
        "ab/cd%2bef%3dgh%3a1",
    ] {
        let url = format!("http://h/x?access_token={encoded}&n=1");
        assert_eq!(
            r.redact(&url),
            "http://h/x?access_token=[redacted]&n=1",
            "{encoded}"
        );
    }
}

#[test]
fn url_credentials_are_redacted_with_their_basic_auth_form() {
    let mut r = Redactor::none();
    r.add_url_credentials("https://admin:pa%40ss-word@host/x");
    // base64("admin:pa@ss-word")
    assert_eq!(base64(b"admin:pa@ss-word"), "YWRtaW46cGFAc3Mtd29yZA==");
    let text = "Basic YWRtaW46cGFAc3Mtd29yZA== pa@ss-word pa%40ss-word";
    assert_eq!(r.redact(text), "Basic [redacted] [redacted] [redacted]");
    assert_eq!(base64(b"ab"), "YWI=");
    assert_eq!(base64(b"a"), "YQ==");
}

#[test]
fn binary_files_keep_their_length() {
    let r = Redactor::new(["tok-123456"]);
    let bytes = b"\xff\x00tok-123456\x00end".to_vec();
    let out = r.redact_bytes(&bytes).unwrap();
    assert_eq!(out.len(), bytes.len());
    assert_eq!(&out[2..12], b"**********");
    assert_eq!(r.redact_bytes(b"\xffclean"), None);
    let mut value = serde_json::json!({"a": ["x tok-123456"], "b": 1});
    r.redact_json(&mut value);
    assert_eq!(value, serde_json::json!({"a": ["x [redacted]"], "b": 1}));
}

#[test]
fn secret_names_are_recognised() {
    for name in [
        "Authorization",
        "x-api-key",
        "DEPLOY_TOKEN",
        "DB_PASSWORD",
        "AWS_SECRET_ACCESS_KEY",
        "Cookie",
        "SSH_KEY",
    ] {
        assert!(is_secret_name(name), "{name}");
    }
    for name in ["x-extra", "PATH", "HOME", "KEYBOARD", "content-type"] {
        assert!(!is_secret_name(name), "{name}");
    }
    let mut r = Redactor::none();
    r.add_secret_variables([
        ("USE_TOKEN", "true"),
        ("HOME", "/home/someone"),
        ("DEPLOY_TOKEN", "dep-0123456789"),
    ]);
    assert_eq!(
        r.redact("true /home/someone dep-0123456789"),
        "true /home/someone [redacted]"
    );
}
