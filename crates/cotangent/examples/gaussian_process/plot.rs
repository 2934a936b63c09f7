//! A small raster plot written as a PNG with no dependency: a canvas, lines, a shaded
//! band, axes with ticks, a 5x7 bitmap font, and an uncompressed (stored-deflate) PNG
//! encoder with its CRC-32 and Adler-32 checksums.

type Rgb = [u8; 3];

/// An RGB canvas mapping data coordinates to pixels inside a frame.
pub struct Plot {
    w: usize,
    h: usize,
    px: Vec<Rgb>,
    /// Data ranges (x0, x1, y0, y1) and the frame (left, top, right, bottom) in pixels.
    range: (f64, f64, f64, f64),
    frame: (usize, usize, usize, usize),
}

impl Plot {
    /// A white canvas with a frame for the data ranges `x0..x1`, `y0..y1`.
    pub fn new(w: usize, h: usize, range: (f64, f64, f64, f64)) -> Plot {
        Plot { w, h, px: vec![[255; 3]; w * h], range, frame: (70, 40, w - 20, h - 50) }
    }

    fn to_px(&self, x: f64, y: f64) -> (f64, f64) {
        let (x0, x1, y0, y1) = self.range;
        let (l, t, r, b) = self.frame;
        let fx = l as f64 + (x - x0) / (x1 - x0) * (r - l) as f64;
        let fy = b as f64 - (y - y0) / (y1 - y0) * (b - t) as f64;
        (fx, fy)
    }

    fn set(&mut self, x: i64, y: i64, c: Rgb) {
        let (l, t, r, b) = self.frame;
        let inside = x >= l as i64 && x <= r as i64 && y >= t as i64 && y <= b as i64;
        if inside {
            self.px[y as usize * self.w + x as usize] = c;
        }
    }

    fn set_any(&mut self, x: i64, y: i64, c: Rgb) {
        if x >= 0 && y >= 0 && (x as usize) < self.w && (y as usize) < self.h {
            self.px[y as usize * self.w + x as usize] = c;
        }
    }

    /// A shaded band between `lo` and `hi` over the sorted `xs`.
    pub fn band(&mut self, xs: &[f64], lo: &[f64], hi: &[f64], c: Rgb) {
        for i in 1..xs.len() {
            let (a, _) = self.to_px(xs[i - 1], 0.0);
            let (b, _) = self.to_px(xs[i], 0.0);
            let (a, b) = (a.round() as i64, b.round() as i64);
            for px in a..=b.max(a) {
                let s = if b > a { (px - a) as f64 / (b - a) as f64 } else { 0.0 };
                let l = lo[i - 1] + s * (lo[i] - lo[i - 1]);
                let h = hi[i - 1] + s * (hi[i] - hi[i - 1]);
                let (_, yl) = self.to_px(0.0, l);
                let (_, yh) = self.to_px(0.0, h);
                for py in yh.round() as i64..=yl.round() as i64 {
                    self.set(px, py, c);
                }
            }
        }
    }

    /// A polyline through the points, `width` pixels wide.
    pub fn line(&mut self, xs: &[f64], ys: &[f64], c: Rgb, width: i64) {
        for i in 1..xs.len() {
            let (x0, y0) = self.to_px(xs[i - 1], ys[i - 1]);
            let (x1, y1) = self.to_px(xs[i], ys[i]);
            let steps = (x1 - x0).abs().max((y1 - y0).abs()).ceil().max(1.0) as usize;
            for s in 0..=steps {
                let f = s as f64 / steps as f64;
                let (x, y) =
                    ((x0 + f * (x1 - x0)).round() as i64, (y0 + f * (y1 - y0)).round() as i64);
                for dx in 0..width {
                    for dy in 0..width {
                        self.set(x + dx - width / 2, y + dy - width / 2, c);
                    }
                }
            }
        }
    }

    /// Dots of 2x2 pixels.
    pub fn points(&mut self, xs: &[f64], ys: &[f64], c: Rgb) {
        for (&x, &y) in xs.iter().zip(ys) {
            let (px, py) = self.to_px(x, y);
            let (px, py) = (px.round() as i64, py.round() as i64);
            for (dx, dy) in [(0, 0), (1, 0), (0, 1), (1, 1)] {
                self.set(px + dx, py + dy, c);
            }
        }
    }

    /// Text at pixel (x, y) (top left), `scale` pixels per font dot.
    pub fn text(&mut self, x: i64, y: i64, s: &str, c: Rgb, scale: i64) {
        for (k, ch) in s.chars().enumerate() {
            let g = glyph(ch);
            for (row, bits) in g.iter().enumerate() {
                for col in 0..5 {
                    if bits >> (4 - col) & 1 == 1 {
                        for sx in 0..scale {
                            for sy in 0..scale {
                                let px = x + (k as i64 * 6 + col) * scale + sx;
                                self.set_any(px, y + row as i64 * scale + sy, c);
                            }
                        }
                    }
                }
            }
        }
    }

    /// The frame, ticks every `dx` and `dy` with their labels, and axis titles.
    pub fn axes(&mut self, dx: f64, dy: f64, xlabel: &str, ylabel: &str) {
        let (l, t, r, b) = self.frame;
        let black = [0, 0, 0];
        for x in l..=r {
            self.set_any(x as i64, t as i64, black);
            self.set_any(x as i64, b as i64, black);
        }
        for y in t..=b {
            self.set_any(l as i64, y as i64, black);
            self.set_any(r as i64, y as i64, black);
        }
        let (x0, x1, y0, y1) = self.range;
        let mut v = (x0 / dx).ceil() * dx;
        while v <= x1 {
            let (px, _) = self.to_px(v, y0);
            let px = px.round() as i64;
            for k in 0..6 {
                self.set_any(px, b as i64 - k, black);
            }
            let label = format!("{v:.0}");
            self.text(px - 3 * label.len() as i64 * 2 / 2, b as i64 + 8, &label, black, 2);
            v += dx;
        }
        let mut v = (y0 / dy).ceil() * dy;
        while v <= y1 {
            let (_, py) = self.to_px(x0, v);
            let py = py.round() as i64;
            for k in 0..6 {
                self.set_any(l as i64 + k, py, black);
            }
            let label = format!("{v:.0}");
            self.text(l as i64 - 8 - 12 * label.len() as i64, py - 7, &label, black, 2);
            v += dy;
        }
        self.text((l + r) as i64 / 2 - 6 * xlabel.len() as i64, b as i64 + 30, xlabel, black, 2);
        self.text(8, 12, ylabel, black, 2);
    }

    /// The image as PNG bytes (8-bit RGB, stored deflate blocks).
    pub fn png(&self) -> Vec<u8> {
        let mut raw = Vec::with_capacity(self.h * (1 + 3 * self.w));
        for row in self.px.chunks(self.w) {
            raw.push(0); // filter: none
            for p in row {
                raw.extend_from_slice(p);
            }
        }
        // zlib: header, stored blocks of at most 65535 bytes, Adler-32
        let mut z = vec![0x78, 0x01];
        let mut blocks = raw.chunks(65535).peekable();
        while let Some(block) = blocks.next() {
            z.push(u8::from(blocks.peek().is_none()));
            let len = block.len() as u16;
            z.extend_from_slice(&len.to_le_bytes());
            z.extend_from_slice(&(!len).to_le_bytes());
            z.extend_from_slice(block);
        }
        let (mut a, mut b) = (1u32, 0u32);
        for &byte in &raw {
            a = (a + u32::from(byte)) % 65521;
            b = (b + a) % 65521;
        }
        z.extend_from_slice(&((b << 16) | a).to_be_bytes());
        let mut out = vec![0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a];
        let mut ihdr = Vec::new();
        ihdr.extend_from_slice(&(self.w as u32).to_be_bytes());
        ihdr.extend_from_slice(&(self.h as u32).to_be_bytes());
        ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);
        chunk(&mut out, *b"IHDR", &ihdr);
        chunk(&mut out, *b"IDAT", &z);
        chunk(&mut out, *b"IEND", &[]);
        out
    }
}

fn chunk(out: &mut Vec<u8>, kind: [u8; 4], data: &[u8]) {
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    let start = out.len();
    out.extend_from_slice(&kind);
    out.extend_from_slice(data);
    let crc = crc32(&out[start..]);
    out.extend_from_slice(&crc.to_be_bytes());
}

fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = 0xffff_ffffu32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 { (crc >> 1) ^ 0xedb8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

/// A 5x7 glyph (rows top to bottom, bit 4 = leftmost column); lowercase as uppercase.
fn glyph(c: char) -> [u8; 7] {
    match c.to_ascii_uppercase() {
        '0' => [0x0E, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0E],
        '1' => [0x04, 0x0C, 0x04, 0x04, 0x04, 0x04, 0x0E],
        '2' => [0x0E, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1F],
        '3' => [0x1F, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0E],
        '4' => [0x02, 0x06, 0x0A, 0x12, 0x1F, 0x02, 0x02],
        '5' => [0x1F, 0x10, 0x1E, 0x01, 0x01, 0x11, 0x0E],
        '6' => [0x06, 0x08, 0x10, 0x1E, 0x11, 0x11, 0x0E],
        '7' => [0x1F, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08],
        '8' => [0x0E, 0x11, 0x11, 0x0E, 0x11, 0x11, 0x0E],
        '9' => [0x0E, 0x11, 0x11, 0x0F, 0x01, 0x02, 0x0C],
        'A' => [0x0E, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11],
        'B' => [0x1E, 0x11, 0x11, 0x1E, 0x11, 0x11, 0x1E],
        'C' => [0x0E, 0x11, 0x10, 0x10, 0x10, 0x11, 0x0E],
        'D' => [0x1C, 0x12, 0x11, 0x11, 0x11, 0x12, 0x1C],
        'E' => [0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x1F],
        'F' => [0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x10],
        'G' => [0x0E, 0x11, 0x10, 0x17, 0x11, 0x11, 0x0F],
        'H' => [0x11, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11],
        'I' => [0x0E, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E],
        'J' => [0x07, 0x02, 0x02, 0x02, 0x02, 0x12, 0x0C],
        'K' => [0x11, 0x12, 0x14, 0x18, 0x14, 0x12, 0x11],
        'L' => [0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x1F],
        'M' => [0x11, 0x1B, 0x15, 0x15, 0x11, 0x11, 0x11],
        'N' => [0x11, 0x11, 0x19, 0x15, 0x13, 0x11, 0x11],
        'O' => [0x0E, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E],
        'P' => [0x1E, 0x11, 0x11, 0x1E, 0x10, 0x10, 0x10],
        'Q' => [0x0E, 0x11, 0x11, 0x11, 0x15, 0x12, 0x0D],
        'R' => [0x1E, 0x11, 0x11, 0x1E, 0x14, 0x12, 0x11],
        'S' => [0x0F, 0x10, 0x10, 0x0E, 0x01, 0x01, 0x1E],
        'T' => [0x1F, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04],
        'U' => [0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E],
        'V' => [0x11, 0x11, 0x11, 0x11, 0x11, 0x0A, 0x04],
        'W' => [0x11, 0x11, 0x11, 0x15, 0x15, 0x15, 0x0A],
        'X' => [0x11, 0x11, 0x0A, 0x04, 0x0A, 0x11, 0x11],
        'Y' => [0x11, 0x11, 0x11, 0x0A, 0x04, 0x04, 0x04],
        'Z' => [0x1F, 0x01, 0x02, 0x04, 0x08, 0x10, 0x1F],
        '.' => [0, 0, 0, 0, 0, 0x0C, 0x0C],
        ',' => [0, 0, 0, 0, 0x0C, 0x04, 0x08],
        '-' => [0, 0, 0, 0x1F, 0, 0, 0],
        '(' => [0x02, 0x04, 0x08, 0x08, 0x08, 0x04, 0x02],
        ')' => [0x08, 0x04, 0x02, 0x02, 0x02, 0x04, 0x08],
        '%' => [0x18, 0x19, 0x02, 0x04, 0x08, 0x13, 0x03],
        ':' => [0, 0x0C, 0x0C, 0, 0x0C, 0x0C, 0],
        '/' => [0, 0x01, 0x02, 0x04, 0x08, 0x10, 0],
        '+' => [0, 0x04, 0x04, 0x1F, 0x04, 0x04, 0],
        _ => [0; 7],
    }
}
