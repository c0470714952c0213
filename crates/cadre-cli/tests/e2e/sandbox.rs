//! The Landlock sandbox around `Bash`, through the binary: a sandboxed command
//! cannot read the data dir, write outside the project, or open a TCP
//! connection; it can write in the project and in /tmp.

use crate::common;

use std::net::TcpListener;

use common::{Harness, Wire, events, stderr, tool_results};

#[tokio::test]
#[cfg_attr(cadre_no_landlock, ignore = "skipped: this kernel has no Landlock")]
async fn sandboxed_commands_are_confined() {
    let outside = tempfile::tempdir_in(common::non_temp_base()).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let tmp_name = format!("/tmp/cadre-sandbox-test-{}", std::process::id());
    let script = format!(
        r#"
rules:
  - name: probe
    replies:
      - tool_calls:
          - {{ name: Bash, input: {{ command: 'cat "$CADRE_HOME_PATH/config.toml"' }} }}
          - {{ name: Bash, input: {{ command: 'echo x > {outside}/escaped.txt' }} }}
          - {{ name: Bash, input: {{ command: 'exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected' }} }}
          - {{ name: Bash, input: {{ command: 'echo ok > inside.txt && echo ok > {tmp_name} && echo wrote' }} }}
      - text: "done"
"#,
        outside = outside.path().display(),
    );
    let h = Harness::new(&script, Wire::Anthropic).await;
    std::fs::create_dir_all(h.data_dir()).unwrap();
    std::fs::write(h.data_dir().join("config.toml"), "# top secret config\n").unwrap();
    let home = h.data_dir().display().to_string();
    let out = h
        .cadre_env(
            &[
                "exec",
                "--json",
                "--permission-mode",
                "acceptEdits",
                "probe",
            ],
            &[("CADRE_HOME_PATH", home.as_str())],
        )
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    common::require_landlock(&events(&out));
    let results = tool_results(&h.records()[1].body);
    assert_eq!(results.len(), 4);
    let (cat, escape, tcp, inside) = (&results[0], &results[1], &results[2], &results[3]);
    assert!(
        cat.1 && !cat.0.contains("top secret"),
        "data dir unreadable: {cat:?}"
    );
    assert!(cat.0.contains("Permission denied"), "{cat:?}");
    assert!(escape.1, "{escape:?}");
    assert!(!outside.path().join("escaped.txt").exists());
    assert!(tcp.1 && !tcp.0.contains("connected"), "{tcp:?}");
    assert!(
        listener.accept().is_err(),
        "no connection reached the listener"
    );
    assert!(!inside.1, "{inside:?}");
    assert!(h.path("inside.txt").exists());
    assert!(std::path::Path::new(&tmp_name).exists());
    let _ = std::fs::remove_file(&tmp_name);
}

#[tokio::test]
async fn network_is_allowed_when_the_user_config_says_so() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let script = format!(
        r#"
rules:
  - name: net
    replies:
      - tool_calls:
          - {{ name: Bash, input: {{ command: 'exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected' }} }}
      - text: "done"
"#
    );
    let h = Harness::new(&script, Wire::Anthropic).await;
    std::fs::create_dir_all(h.data_dir()).unwrap();
    std::fs::write(
        h.data_dir().join("config.toml"),
        "[sandbox]\nnetwork = true\n",
    )
    .unwrap();
    let out = h
        .cadre(&[
            "exec",
            "--json",
            "--permission-mode",
            "acceptEdits",
            "probe",
        ])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let results = tool_results(&h.records()[1].body);
    assert_eq!(results[0].0, "connected", "{:?}", results[0]);
}
