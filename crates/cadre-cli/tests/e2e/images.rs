//! Images and PDFs through the binary: `Read` of an image sends image
//! content (an `image` block in the tool result on Anthropic, an
//! `image_url` part in a following user message on OpenAI), a large photo
//! is scaled and re-encoded below the APIs' limits, a PDF's pages come back
//! as text, a model configured with `images = false` gets a note instead,
//! `@shot.png` attaches the image to the user's message (exec and -p), the
//! session log keeps each image once beside it (and resume sends it again),
//! and in the full screen a pasted image path becomes an `[Image #1]` chip
//! whose image the request holds.

use std::io::Cursor;
use std::os::unix::fs::PermissionsExt;

use crate::common;

use base64::Engine as _;
use common::tmux::{Pane, tmux_available};
use common::{Harness, Wire, events, stderr, tool_results};
use serde_json::Value;

/// A PNG of `w`×`h` pixels: a gradient, or noise (which does not compress).
fn png(w: u32, h: u32, noise: bool) -> Vec<u8> {
    let mut seed: u32 = 12345;
    let img = image::RgbImage::from_fn(w, h, |x, y| {
        if noise {
            seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            let b = seed.to_le_bytes();
            image::Rgb([b[1], b[2], b[3]])
        } else {
            image::Rgb([(x % 256) as u8, (y % 256) as u8, 128])
        }
    });
    let mut out = Cursor::new(Vec::new());
    image::DynamicImage::ImageRgb8(img)
        .write_to(&mut out, image::ImageFormat::Png)
        .unwrap();
    out.into_inner()
}

/// A PDF of `pages` pages, page N saying "This is page N.".
fn pdf(pages: u32) -> Vec<u8> {
    use lopdf::content::{Content, Operation};
    use lopdf::{Document, Object, Stream, dictionary};
    let mut doc = Document::with_version("1.5");
    let pages_id = doc.new_object_id();
    let font_id = doc.add_object(dictionary! {
        "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Courier",
    });
    let resources_id = doc.add_object(dictionary! { "Font" => dictionary! { "F1" => font_id } });
    let mut kids = Vec::new();
    for n in 1..=pages {
        let content = Content {
            operations: vec![
                Operation::new("BT", vec![]),
                Operation::new("Tf", vec!["F1".into(), 24.into()]),
                Operation::new("Td", vec![100.into(), 600.into()]),
                Operation::new(
                    "Tj",
                    vec![Object::string_literal(format!("This is page {n}."))],
                ),
                Operation::new("ET", vec![]),
            ],
        };
        let content_id = doc.add_object(Stream::new(dictionary! {}, content.encode().unwrap()));
        let page_id = doc.add_object(dictionary! {
            "Type" => "Page", "Parent" => pages_id, "Contents" => content_id,
        });
        kids.push(page_id.into());
    }
    doc.objects.insert(
        pages_id,
        Object::Dictionary(dictionary! {
            "Type" => "Pages", "Kids" => kids, "Count" => pages as i64,
            "Resources" => resources_id,
            "MediaBox" => vec![0.into(), 0.into(), 595.into(), 842.into()],
        }),
    );
    let catalog_id = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
    doc.trailer.set("Root", catalog_id);
    let mut out = Vec::new();
    doc.save_to(&mut out).unwrap();
    out
}

/// A model that reads `input` (JSON) with `Read`, then ends.
fn read_script(input: &str) -> String {
    format!(
        "rules:\n  - name: main\n    replies:\n      - tool_calls:\n          - {{ name: Read, input: {input} }}\n      - text: \"seen\"\n"
    )
}

const CHAT: &str =
    "rules:\n  - name: chat\n    replies:\n      - text: \"Noted.\"\n      - text: \"Again.\"\n";

/// The Anthropic image blocks of a tool result's content in `body`.
fn result_parts(body: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    for m in body["messages"].as_array().into_iter().flatten() {
        for b in m["content"].as_array().into_iter().flatten() {
            if b["type"] == "tool_result"
                && let Some(parts) = b["content"].as_array()
            {
                out.extend(parts.iter().cloned());
            }
        }
    }
    out
}

/// The `image` blocks of the user messages (not tool results) of an Anthropic request.
fn user_image_blocks(body: &Value) -> Vec<Value> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "user")
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|b| b["type"] == "image")
        .collect()
}

/// Decodes base64 image data and returns its pixel size.
fn dimensions(data: &str) -> (u32, u32) {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data)
        .unwrap();
    image::ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()
        .unwrap()
        .into_dimensions()
        .unwrap()
}

#[tokio::test]
async fn read_of_a_png_sends_an_image_block_on_anthropic_and_an_image_url_on_openai() {
    for wire in common::BOTH_WIRES {
        let h = Harness::new(&read_script("{ file_path: \"shot.png\" }"), wire).await;
        let bytes = png(64, 48, false);
        std::fs::write(h.path("shot.png"), &bytes).unwrap();
        let out = h.cadre(&["exec", "look"]).await;
        assert!(out.status.success(), "{wire:?}: {}", stderr(&out));
        let records = h.records();
        let body = &records[1].body;
        let results = tool_results(body);
        assert!(
            results[0].0.contains("64x48 px, image/png"),
            "{wire:?}: {results:?}"
        );
        let want = base64::engine::general_purpose::STANDARD.encode(&bytes);
        match wire {
            Wire::Anthropic => {
                let parts = result_parts(body);
                let image = parts.iter().find(|p| p["type"] == "image").unwrap();
                assert_eq!(image["source"]["type"], "base64");
                assert_eq!(image["source"]["media_type"], "image/png");
                assert_eq!(image["source"]["data"], want.as_str());
            }
            Wire::OpenAi => {
                let messages = body["messages"].as_array().unwrap();
                let tool_at = messages.iter().position(|m| m["role"] == "tool").unwrap();
                let next = &messages[tool_at + 1];
                assert_eq!(next["role"], "user", "{next}");
                assert_eq!(next["content"][0]["type"], "image_url", "{next}");
                assert_eq!(
                    next["content"][0]["image_url"]["url"],
                    format!("data:image/png;base64,{want}")
                );
            }
        }
    }
}

#[tokio::test]
async fn a_six_megabyte_photo_is_scaled_and_re_encoded_below_the_limit() {
    let h = Harness::new(
        &read_script("{ file_path: \"photo.png\" }"),
        Wire::Anthropic,
    )
    .await;
    let bytes = png(2400, 900, true);
    assert!(bytes.len() > 6 * 1024 * 1024, "{} bytes", bytes.len());
    std::fs::write(h.path("photo.png"), &bytes).unwrap();
    let out = h.cadre(&["exec", "look"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let records = h.records();
    let parts = result_parts(&records[1].body);
    let image = parts.iter().find(|p| p["type"] == "image").unwrap();
    assert_eq!(image["source"]["media_type"], "image/jpeg");
    let data = image["source"]["data"].as_str().unwrap();
    assert!(data.len() <= 5 * 1024 * 1024, "{} base64 bytes", data.len());
    let (w, hgt) = dimensions(data);
    assert_eq!(w, 1568);
    assert!(hgt <= 1568);
    let text = &tool_results(&records[1].body)[0].0;
    assert!(text.contains("scaled down from 2400x900"), "{text}");
}

#[tokio::test]
async fn a_pdfs_pages_two_and_three_come_back_as_text() {
    let h = Harness::new(
        &read_script("{ file_path: \"doc.pdf\", pages: \"2-3\" }"),
        Wire::Anthropic,
    )
    .await;
    std::fs::write(h.path("doc.pdf"), pdf(5)).unwrap();
    let out = h.cadre(&["exec", "read it"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let records = h.records();
    let (text, is_error) = &tool_results(&records[1].body)[0];
    assert!(!is_error, "{text}");
    assert!(text.contains("5 pages; pages 2-3 as text"), "{text}");
    assert!(text.contains("--- page 2 of 5 ---"), "{text}");
    assert!(text.contains("This is page 2."), "{text}");
    assert!(text.contains("This is page 3."), "{text}");
    assert!(!text.contains("This is page 4."), "{text}");
    // Only part of it was read: no document block.
    assert!(result_parts(&records[1].body).is_empty());
}

#[tokio::test]
async fn a_whole_small_pdf_also_goes_as_a_document_block_and_too_many_pages_are_refused() {
    let script = "rules:\n  - name: main\n    replies:\n      - tool_calls:\n          - { name: Read, input: { file_path: \"short.pdf\" } }\n          - { name: Read, input: { file_path: \"long.pdf\", pages: \"1-25\" } }\n      - text: \"seen\"\n";
    let h = Harness::new(script, Wire::Anthropic).await;
    std::fs::write(h.path("short.pdf"), pdf(2)).unwrap();
    std::fs::write(h.path("long.pdf"), pdf(30)).unwrap();
    let out = h.cadre(&["exec", "read them"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let records = h.records();
    let parts = result_parts(&records[1].body);
    let doc = parts.iter().find(|p| p["type"] == "document").unwrap();
    assert_eq!(doc["source"]["media_type"], "application/pdf");
    let results = tool_results(&records[1].body);
    assert!(results[1].1, "{results:?}");
    assert!(results[1].0.contains("at most 20 pages"), "{results:?}");
}

#[tokio::test]
async fn a_model_configured_without_images_gets_a_text_note() {
    let h = Harness::new(&read_script("{ file_path: \"shot.png\" }"), Wire::OpenAi).await;
    std::fs::create_dir_all(h.data_dir()).unwrap();
    std::fs::write(
        h.data_dir().join("config.toml"),
        "[models.openai.\"mock-model\"]\nimages = false\n",
    )
    .unwrap();
    std::fs::write(h.path("shot.png"), png(32, 32, false)).unwrap();
    let out = h.cadre(&["exec", "look"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let body = &h.records()[1].body;
    assert!(!body.to_string().contains("image_url"), "{body}");
    assert!(!body.to_string().contains("base64,"), "{body}");
    let text = &tool_results(body)[0].0;
    assert!(
        text.contains("image/png not shown: the model mock-model is configured to take no images"),
        "{text}"
    );
}

#[tokio::test]
async fn at_image_in_exec_and_print_mode_sends_an_image_block() {
    for args in [
        &["exec", "what is in @shot.png"][..],
        &["-p", "what is in @shot.png"][..],
    ] {
        let h = Harness::new(CHAT, Wire::Anthropic).await;
        let bytes = png(40, 20, false);
        std::fs::write(h.path("shot.png"), &bytes).unwrap();
        let out = h.cadre(args).await;
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        let body = &h.records()[0].body;
        let images = user_image_blocks(body);
        assert_eq!(images.len(), 1, "{args:?}: {body}");
        assert_eq!(
            images[0]["source"]["data"],
            base64::engine::general_purpose::STANDARD
                .encode(&bytes)
                .as_str()
        );
        assert!(
            common::user_plain_text(body).contains("what is in @shot.png"),
            "{body}"
        );
    }
}

#[tokio::test]
async fn the_log_keeps_each_image_once_beside_it_and_resume_sends_it_again() {
    let script = "rules:\n  - name: main\n    replies:\n      - tool_calls:\n          - { name: Read, input: { file_path: \"shot.png\" } }\n      - tool_calls:\n          - { name: Read, input: { file_path: \"shot.png\" } }\n      - text: \"seen\"\n      - text: \"still seen\"\n";
    let h = Harness::new(script, Wire::Anthropic).await;
    let bytes = png(50, 50, false);
    std::fs::write(h.path("shot.png"), &bytes).unwrap();
    let out = h.cadre(&["exec", "--json", "look at @shot.png"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let evs = events(&out);
    let id = evs.iter().find(|e| e["type"] == "session_started").unwrap()["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let sessions = h.data_dir().join("sessions");
    let log = std::fs::read_to_string(sessions.join(format!("{id}.jsonl"))).unwrap();
    let data = base64::engine::general_purpose::STANDARD.encode(&bytes);
    assert!(!log.contains(&data), "no inline image data in the log");
    let images = sessions.join(format!("{id}.images"));
    let files: Vec<_> = std::fs::read_dir(&images)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    assert_eq!(std::fs::read(&files[0]).unwrap(), bytes);
    let name = files[0].file_name().unwrap().to_str().unwrap().to_string();
    assert!(name.ends_with(".png") && name.len() == 64 + 4, "{name}");
    // Named three times (the mention and two results), stored once.
    assert_eq!(log.matches(&format!("sha256:{}", &name[..64])).count(), 3);
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&images), 0o700);
    assert_eq!(mode(&files[0]), 0o600);

    let out = h.cadre(&["exec", "--resume", &id, "and now?"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let records = h.records();
    let body = &records.last().unwrap().body;
    assert_eq!(user_image_blocks(body).len(), 1, "{body}");
    let with_image = result_parts(body)
        .iter()
        .filter(|p| p["type"] == "image" && p["source"]["data"] == data.as_str())
        .count();
    assert_eq!(with_image, 2, "both results keep their image on resume");

    // Removing the session removes its images.
    let out = h.cadre(&["sessions", "rm", &id, "--yes"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!images.exists());
}

#[tokio::test]
async fn a_pasted_image_path_becomes_a_chip_and_the_request_holds_the_image() {
    if !tmux_available() {
        return;
    }
    let h = Harness::new(CHAT, Wire::Anthropic).await;
    let pane = Pane::start(&h, &[]);
    pane.wait_text("mock-model").await;
    let shot = pane.file("screen shot.png");
    let bytes = png(30, 30, false);
    std::fs::write(&shot, &bytes).unwrap();
    // As a terminal pastes a dropped file: the path, quoted.
    let pasted = pane.file("paste.txt");
    std::fs::write(&pasted, format!("'{}'", shot.display())).unwrap();
    assert!(
        pane.tmux(&["load-buffer", &pasted.display().to_string()])
            .status
            .success()
    );
    pane.type_text("what is wrong here ");
    pane.wait_text("› what is wrong here").await;
    assert!(pane.tmux(&["paste-buffer", "-p"]).status.success());
    let screen = pane.wait_text("[Image #1]").await;
    assert!(!screen.contains("screen shot.png"), "{screen}");
    pane.keys(&["Enter"]);
    pane.wait_text("Noted.").await;
    let records = h.records();
    assert_eq!(records.len(), 1);
    let body = &records[0].body;
    assert!(
        common::user_plain_text(body).contains("what is wrong here [Image #1]"),
        "{body}"
    );
    let images = user_image_blocks(body);
    assert_eq!(images.len(), 1, "{body}");
    assert_eq!(
        images[0]["source"]["data"],
        base64::engine::general_purpose::STANDARD
            .encode(&bytes)
            .as_str()
    );
    pane.keys(&["C-c", "C-c"]);
    assert_eq!(pane.exit_status().await, 0);
}
