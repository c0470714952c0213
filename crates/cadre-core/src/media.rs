//! Images and PDFs for the model: recognising them by their first bytes,
//! fitting images to the model APIs' limits, and a PDF's text page by page.

use std::io::Cursor;

use base64::Engine as _;
use image::{DynamicImage, ImageFormat, ImageReader};
use thiserror::Error;

use crate::model::ToolImage;

/// Longest edge sent: larger images are scaled down (the APIs scale them
/// down themselves past about this, so more pixels only cost bytes).
pub const MAX_EDGE: u32 = 1568;
/// An image within [`MAX_EDGE`] and at most this size is sent as it is;
/// a larger one is re-encoded.
pub const KEEP_BYTES: usize = 500 * 1024;
/// Largest image sent, in bytes before base64: 5 MB once encoded, the
/// Anthropic limit per image.
pub const MAX_IMAGE_BYTES: usize = 5 * 1024 * 1024 / 4 * 3;
/// Largest image file read at all.
pub const MAX_IMAGE_FILE_BYTES: u64 = 64 * 1024 * 1024;
/// Largest PDF file read.
pub const MAX_PDF_FILE_BYTES: u64 = 64 * 1024 * 1024;
/// Largest PDF also sent whole as a document block (where the provider takes one).
pub const MAX_DOCUMENT_BYTES: usize = 4 * 1024 * 1024;
/// Most PDF pages one `Read` returns.
pub const MAX_PDF_PAGES: u32 = 20;
pub use crate::model::PDF_MEDIA_TYPE;

/// Why an image or PDF could not be used.
#[derive(Debug, Error)]
pub enum MediaError {
    /// The image could not be decoded or encoded.
    #[error("not a readable image: {0}")]
    Image(#[from] image::ImageError),
    /// The bytes could not be read.
    #[error("cannot read it: {0}")]
    Io(#[from] std::io::Error),
    /// The PDF could not be parsed.
    #[error("not a readable PDF: {0}")]
    Pdf(#[from] lopdf::Error),
    /// A `pages` value that names no pages.
    #[error("{0}")]
    Pages(String),
}

/// What a file's first bytes say it is, when it is a kind cadre sends as media.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MediaKind {
    /// An image of this media type (`image/png`, …).
    Image(&'static str),
    /// A PDF.
    Pdf,
}

/// The media kind of a file starting with `head` (its first 16 bytes or more).
pub fn sniff(head: &[u8]) -> Option<MediaKind> {
    if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some(MediaKind::Image("image/png"))
    } else if head.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some(MediaKind::Image("image/jpeg"))
    } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        Some(MediaKind::Image("image/gif"))
    } else if head.len() >= 12 && &head[..4] == b"RIFF" && &head[8..12] == b"WEBP" {
        Some(MediaKind::Image("image/webp"))
    } else if head.starts_with(b"%PDF-") {
        Some(MediaKind::Pdf)
    } else {
        None
    }
}

/// True if `path` ends in an image extension the model APIs take (for
/// pasted paths, before the file is opened).
pub fn has_image_extension(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    [".png", ".jpg", ".jpeg", ".gif", ".webp"]
        .iter()
        .any(|ext| lower.ends_with(ext))
}

/// The file extension for an image's media type (for stored copies).
pub fn extension_of(media_type: &str) -> &'static str {
    match media_type {
        "image/png" => "png",
        "image/jpeg" => "jpg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        PDF_MEDIA_TYPE => "pdf",
        _ => "bin",
    }
}

/// An image fitted to the limits, with what the model is told of it.
#[derive(Debug, Clone, PartialEq)]
pub struct PreparedImage {
    /// The image to send.
    pub image: ToolImage,
    /// Its size as sent, in pixels.
    pub width: u32,
    /// See `width`.
    pub height: u32,
    /// The size of the original, when it was scaled down.
    pub resized_from: Option<(u32, u32)>,
    /// Bytes sent (before base64).
    pub bytes: usize,
}

impl PreparedImage {
    /// One line naming the image for the model and the transcript.
    pub fn describe(&self, name: &str) -> String {
        let resized = match self.resized_from {
            Some((w, h)) => format!(", scaled down from {w}x{h}"),
            None => String::new(),
        };
        format!(
            "[image {name}: {}x{} px, {}, {} KB{resized}]",
            self.width,
            self.height,
            self.image.media_type,
            self.bytes.div_ceil(1024)
        )
    }
}

/// The base64 text of `bytes`.
pub fn base64_encode(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The bytes of base64 text, or `None` when it is not base64.
pub fn base64_decode(text: &str) -> Option<Vec<u8>> {
    base64::engine::general_purpose::STANDARD.decode(text).ok()
}

/// `bytes` (an image of `media_type`) fitted to the model APIs' limits: scaled
/// so its long edge is at most [`MAX_EDGE`], and re-encoded (PNG when that is
/// small, else JPEG at falling quality) when it is larger than [`KEEP_BYTES`].
pub fn prepare_image(bytes: &[u8], media_type: &str) -> Result<PreparedImage, MediaError> {
    let reader = ImageReader::new(Cursor::new(bytes)).with_guessed_format()?;
    let (width, height) = reader.into_dimensions()?;
    if width.max(height) <= MAX_EDGE && bytes.len() <= KEEP_BYTES {
        return Ok(PreparedImage {
            image: ToolImage {
                media_type: media_type.to_string(),
                data: base64_encode(bytes),
            },
            width,
            height,
            resized_from: None,
            bytes: bytes.len(),
        });
    }
    let mut img = ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()?
        .decode()?;
    let mut resized_from = None;
    if width.max(height) > MAX_EDGE {
        img = img.resize(MAX_EDGE, MAX_EDGE, image::imageops::FilterType::Triangle);
        resized_from = Some((width, height));
    }
    loop {
        let (png, jpeg) = encode_small(&img)?;
        let chosen = match png {
            Some(png) if png.len() <= KEEP_BYTES => Some((png, "image/png")),
            _ => jpeg.map(|j| (j, "image/jpeg")),
        };
        if let Some((out, media_type)) = chosen {
            return Ok(PreparedImage {
                width: img.width(),
                height: img.height(),
                image: ToolImage {
                    media_type: media_type.to_string(),
                    data: base64_encode(&out),
                },
                resized_from,
                bytes: out.len(),
            });
        }
        // Even the lowest quality is too large: halve the size and try again.
        let (w, h) = (img.width(), img.height());
        if w <= 16 || h <= 16 {
            return Err(MediaError::Pages(
                "the image cannot be made small enough to send".into(),
            ));
        }
        resized_from.get_or_insert((width, height));
        img = img.resize(w / 2, h / 2, image::imageops::FilterType::Triangle);
    }
}

/// An image encoded as PNG and as JPEG, each when made.
type Encodings = (Option<Vec<u8>>, Option<Vec<u8>>);

/// The image as PNG when it has transparency (a screenshot's alpha is worth
/// keeping if it is small), and as the first JPEG quality that fits
/// [`MAX_IMAGE_BYTES`], if any.
fn encode_small(img: &DynamicImage) -> Result<Encodings, MediaError> {
    let png = if img.color().has_alpha() {
        let mut out = Cursor::new(Vec::new());
        img.write_to(&mut out, ImageFormat::Png)?;
        Some(out.into_inner())
    } else {
        None
    };
    if png.as_ref().is_some_and(|p| p.len() <= KEEP_BYTES) {
        return Ok((png, None));
    }
    let rgb = DynamicImage::ImageRgb8(img.to_rgb8());
    for quality in [85u8, 70, 50, 30] {
        let mut out = Vec::new();
        let encoder = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, quality);
        rgb.write_with_encoder(encoder)?;
        if out.len() <= MAX_IMAGE_BYTES {
            return Ok((png, Some(out)));
        }
    }
    Ok((png, None))
}

/// A page range as `Read` takes it: `"3"`, `"1-5"`, `"4-"` (to the end).
/// `total` is the document's page count.
pub fn parse_pages(spec: &str, total: u32) -> Result<(u32, u32), MediaError> {
    let bad = || {
        MediaError::Pages(format!(
            "pages must look like \"3\" or \"1-5\", not {spec:?}"
        ))
    };
    let spec = spec.trim();
    let (first, last) = match spec.split_once('-') {
        Some((a, b)) => {
            let first: u32 = a.trim().parse().map_err(|_| bad())?;
            let last: u32 = if b.trim().is_empty() {
                total.max(first)
            } else {
                b.trim().parse().map_err(|_| bad())?
            };
            (first, last)
        }
        None => {
            let page: u32 = spec.parse().map_err(|_| bad())?;
            (page, page)
        }
    };
    if first == 0 || last < first {
        return Err(bad());
    }
    if first > total {
        return Err(MediaError::Pages(format!(
            "page {first} is past the end: the PDF has {total} page{}",
            if total == 1 { "" } else { "s" }
        )));
    }
    let last = last.min(total);
    if last - first + 1 > MAX_PDF_PAGES {
        return Err(MediaError::Pages(format!(
            "pages {first}-{last} are {} pages; Read returns at most {MAX_PDF_PAGES} pages a call, so ask for a smaller range (e.g. \"{first}-{}\")",
            last - first + 1,
            first + MAX_PDF_PAGES - 1
        )));
    }
    Ok((first, last))
}

/// A PDF's text, page by page.
#[derive(Debug, Clone, PartialEq)]
pub struct PdfText {
    /// Pages in the document.
    pub total_pages: u32,
    /// The pages shown, first and last (1-based).
    pub shown: (u32, u32),
    /// Each shown page's text, in order.
    pub pages: Vec<String>,
}

impl PdfText {
    /// The pages as the model sees them, each under a `--- page N ---` line.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for (i, text) in self.pages.iter().enumerate() {
            let n = self.shown.0 + i as u32;
            out.push_str(&format!("--- page {n} of {} ---\n", self.total_pages));
            let text = text.trim_end();
            if text.is_empty() {
                out.push_str("(no text on this page; it may be a scanned image)\n");
            } else {
                out.push_str(text);
                out.push('\n');
            }
        }
        out
    }
}

/// The text of the PDF `bytes`, the pages `pages` names (all of them when
/// `None`, which is refused past [`MAX_PDF_PAGES`]).
pub fn pdf_text(bytes: &[u8], pages: Option<&str>) -> Result<PdfText, MediaError> {
    let doc = lopdf::Document::load_mem(bytes)?;
    let numbers: Vec<u32> = doc.get_pages().keys().copied().collect();
    let total = numbers.len() as u32;
    let (first, last) = match pages {
        Some(spec) => parse_pages(spec, total)?,
        None if total > MAX_PDF_PAGES => {
            return Err(MediaError::Pages(format!(
                "this PDF has {total} pages, more than the {MAX_PDF_PAGES} Read returns at once; pass pages (e.g. \"1-{MAX_PDF_PAGES}\")"
            )));
        }
        None => (1, total.max(1)),
    };
    let mut texts = Vec::new();
    for n in first..=last.min(total) {
        // A page whose text cannot be extracted still has its place.
        texts.push(doc.extract_text(&[n]).unwrap_or_default());
    }
    Ok(PdfText {
        total_pages: total,
        shown: (first, last.min(total)),
        pages: texts,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn media_is_known_by_its_first_bytes() {
        assert_eq!(
            sniff(b"\x89PNG\r\n\x1a\n...."),
            Some(MediaKind::Image("image/png"))
        );
        assert_eq!(
            sniff(&[0xFF, 0xD8, 0xFF, 0xE0]),
            Some(MediaKind::Image("image/jpeg"))
        );
        assert_eq!(sniff(b"GIF89a.."), Some(MediaKind::Image("image/gif")));
        assert_eq!(
            sniff(b"RIFF\0\0\0\0WEBPVP8 "),
            Some(MediaKind::Image("image/webp"))
        );
        assert_eq!(sniff(b"%PDF-1.7"), Some(MediaKind::Pdf));
        assert_eq!(sniff(b"hello"), None);
    }

    #[test]
    fn page_ranges_are_checked() {
        assert_eq!(parse_pages("2-3", 10).ok(), Some((2, 3)));
        assert_eq!(parse_pages("4", 10).ok(), Some((4, 4)));
        assert_eq!(parse_pages("8-", 10).ok(), Some((8, 10)));
        assert_eq!(parse_pages("5-99", 10).ok(), Some((5, 10)));
        assert!(parse_pages("0-2", 10).is_err());
        assert!(parse_pages("3-2", 10).is_err());
        assert!(parse_pages("x", 10).is_err());
        assert!(parse_pages("11", 10).is_err());
        let too_many = parse_pages("1-21", 50).err().map(|e| e.to_string());
        assert!(too_many.is_some_and(|e| e.contains("at most 20")));
    }

    fn png(w: u32, h: u32, noise: bool) -> Vec<u8> {
        let mut seed: u32 = 7;
        let img = image::RgbImage::from_fn(w, h, |x, y| {
            if noise {
                seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                let b = seed.to_le_bytes();
                image::Rgb([b[1], b[2], b[3]])
            } else {
                image::Rgb([(x % 256) as u8, (y % 256) as u8, 90])
            }
        });
        let mut out = Cursor::new(Vec::new());
        DynamicImage::ImageRgb8(img)
            .write_to(&mut out, ImageFormat::Png)
            .expect("encode");
        out.into_inner()
    }

    #[test]
    fn a_small_image_goes_as_it_is() {
        let bytes = png(40, 30, false);
        let p = prepare_image(&bytes, "image/png").expect("prepared");
        assert_eq!((p.width, p.height, p.resized_from), (40, 30, None));
        assert_eq!(base64_decode(&p.image.data), Some(bytes));
        assert_eq!(p.image.media_type, "image/png");
    }

    #[test]
    fn a_large_noisy_image_is_scaled_and_re_encoded_below_the_limit() {
        let bytes = png(2000, 1200, true);
        assert!(bytes.len() > 5 * 1024 * 1024);
        let p = prepare_image(&bytes, "image/png").expect("prepared");
        assert_eq!(p.resized_from, Some((2000, 1200)));
        assert_eq!(p.width, MAX_EDGE);
        assert!(p.bytes <= MAX_IMAGE_BYTES);
        assert!(p.image.data.len() <= 5 * 1024 * 1024);
        assert_eq!(p.image.media_type, "image/jpeg");
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
        let resources_id = doc.add_object(dictionary! {
            "Font" => dictionary! { "F1" => font_id },
        });
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
            let content_id = doc.add_object(Stream::new(
                dictionary! {},
                content.encode().expect("encode"),
            ));
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
        doc.save_to(&mut out).expect("save");
        out
    }

    #[test]
    fn a_pdfs_pages_come_back_as_text() {
        let bytes = pdf(4);
        assert_eq!(sniff(&bytes), Some(MediaKind::Pdf));
        let text = pdf_text(&bytes, Some("2-3")).expect("text");
        assert_eq!((text.total_pages, text.shown), (4, (2, 3)));
        let rendered = text.render();
        assert!(
            rendered.contains("--- page 2 of 4 ---\nThis is page 2."),
            "{rendered}"
        );
        assert!(rendered.contains("This is page 3."), "{rendered}");
        assert!(!rendered.contains("page 1."), "{rendered}");
        let long = pdf(21);
        let refused = pdf_text(&long, None).err().map(|e| e.to_string());
        assert!(refused.is_some_and(|e| e.contains("21 pages")));
    }
}
