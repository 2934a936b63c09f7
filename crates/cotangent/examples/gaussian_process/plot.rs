//! The example's plot, drawn with plotters: the observations, the Gaussian process's mean
//! over the training range and its forecast beyond it, the 95% predictive band, axes
//! with labels, a title and a legend; above, the whole record and forecast, below, a
//! detail of the years around the last observation. A PNG (plotters' bitmap backend) or
//! an SVG, by the extension of the path. The text is drawn with the Open Sans font that the example
//! ships (`OpenSans-Regular.ttf`, Apache-2.0, `OpenSans-LICENSE.txt`), so that the PNG
//! needs no system font; the SVG names the family `sans-serif` and its viewer's fonts
//! draw it.

use std::error::Error;
use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::{register_font, FontStyle};

/// Open Sans Regular, embedded so that a machine without fonts draws the same text.
const FONT: &[u8] = include_bytes!("OpenSans-Regular.ttf");

/// The family the font is registered under, and the one the SVG's text names.
const FAMILY: &str = "sans-serif";

/// The image's size in pixels (the SVG's in user units).
const SIZE: (u32, u32) = (1200, 1100);

/// The observations, in a grey the coloured lines stand out from.
const DATA: RGBColor = RGBColor(140, 140, 140);
/// The mean over the training range.
const FIT: RGBColor = RGBColor(31, 119, 180);
/// The mean past the last observation.
const FORECAST: RGBColor = RGBColor(214, 39, 40);
/// The 95% band, drawn translucent.
const BAND: RGBColor = RGBColor(100, 150, 230);

/// The image formats the plot can be written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A raster image (plotters' bitmap backend).
    Png,
    /// A vector image; its text is left to the viewer's sans-serif font.
    Svg,
}

impl Format {
    /// The format that `path`'s extension names (`.png` or `.svg`, any case); `None` for
    /// any other path, which the example refuses before fitting rather than after.
    pub fn of(path: &Path) -> Option<Format> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "png" => Some(Format::Png),
            "svg" => Some(Format::Svg),
            _ => None,
        }
    }
}

/// What the plot shows: the observations and the predictive distribution on a grid.
#[derive(Debug, Clone, Copy)]
pub struct Forecast<'a> {
    /// The observations' decimal years.
    pub obs_x: &'a [f64],
    /// The observations in ppm.
    pub obs_y: &'a [f64],
    /// The grid (sorted decimal years), from the first observation to past the last.
    pub x: &'a [f64],
    /// The predictive mean on the grid, in ppm.
    pub mean: &'a [f64],
    /// The lower end of the 95% band on the grid.
    pub lo: &'a [f64],
    /// The upper end of the 95% band on the grid.
    pub hi: &'a [f64],
}

/// Writes the plot of `f` to `path`, as a PNG or an SVG by its extension ([`Format::of`];
/// any other extension is an error).
pub fn write(path: &Path, f: &Forecast<'_>) -> Result<(), Box<dyn Error>> {
    register_font(FAMILY, FontStyle::Normal, FONT)
        .map_err(|_| "the embedded font OpenSans-Regular.ttf does not parse")?;
    let drawn = match Format::of(path) {
        Some(Format::Png) => draw(&BitMapBackend::new(path, SIZE).into_drawing_area(), f),
        Some(Format::Svg) => draw(&SVGBackend::new(path, SIZE).into_drawing_area(), f),
        None => Err("the plot's name must end in .png or .svg".into()),
    };
    drawn.map_err(|e| format!("plot {}: {e}", path.display()).into())
}

/// `v` rounded down (`up` false) or up to a multiple of `step`.
fn round_to(v: f64, step: f64, up: bool) -> f64 {
    if up {
        (v / step).ceil() * step
    } else {
        (v / step).floor() * step
    }
}

/// `n` with its digits in groups of three: `2,225`.
fn grouped(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The years the detail panel shows before the last observation and after it.
const DETAIL: (f64, f64) = (6.0, 4.0);

/// Draws the plot on `root` and presents it (writes the file): the whole record and
/// forecast above, with the title and the legend; below, the last years of the record
/// and the first of the forecast, where the observations show apart from the mean
/// (at the scale of the whole record the mean runs through them and hides them).
fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    f: &Forecast<'_>,
) -> Result<(), Box<dyn Error>>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE)?;
    let (whole, detail) = root.split_vertically(SIZE.1 * 62 / 100);
    let end = f.obs_x.iter().fold(f64::MIN, |m, &v| m.max(v));
    let x = (f.x[0].floor() - 1.0, f.x[f.x.len() - 1].ceil() + 1.0);
    let title = format!(
        "Mauna Loa CO2, weekly {:.0}\u{2013}{:.0}: Gaussian-process fit and forecast to {:.0}",
        f.obs_x[0].floor(),
        end.floor(),
        f.x[f.x.len() - 1].floor()
    );
    panel(&whole, f, x, &title, 30, 1.5)?;
    let x = (end.round() - DETAIL.0, end.round() + DETAIL.1);
    let caption = format!(
        "detail, {:.0}\u{2013}{:.0}: the observations against the fit and the forecast's start",
        x.0, x.1
    );
    panel(&detail, f, x, &caption, 22, 2.0)?;
    root.present()?;
    Ok(())
}

/// Draws one panel of the plot on `area`: years `x.0..x.1` (the values axis fitted to
/// what falls there), a caption of `caption_size` pixels, the observations as dots of
/// radius `dot`; the legend too when the panel starts with the record.
fn panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    f: &Forecast<'_>,
    x: (f64, f64),
    caption: &str,
    caption_size: u32,
    dot: f64,
) -> Result<(), Box<dyn Error>>
where
    DB::ErrorType: 'static,
{
    // plotters clamps points outside the axes onto the frame, so only those inside are
    // drawn (the grid has a point on every whole year, the ends of the axes)
    let inside = |t: f64| t >= x.0 - 1e-9 && t <= x.1 + 1e-9;
    let shown = |xs: &'_ [f64], ys: &'_ [f64]| -> Vec<f64> {
        xs.iter().zip(ys).filter(|(&t, _)| inside(t)).map(|(_, &y)| y).collect()
    };
    let obs = shown(f.obs_x, f.obs_y);
    let top = shown(f.x, f.hi).iter().chain(&obs).fold(f64::MIN, |m, &v| m.max(v));
    let bottom = shown(f.x, f.lo).iter().chain(&obs).fold(f64::MAX, |m, &v| m.min(v));
    // the values axis: what is shown and a little room, its ends on multiples of 5 (of 1
    // for a narrow range)
    let step = if top - bottom > 40.0 { 5.0 } else { 1.0 };
    let y = (round_to(bottom - step / 5.0, step, false), round_to(top + step / 5.0, step, true));
    let whole = inside(f.x[0]);
    let mut chart = ChartBuilder::on(area)
        .caption(caption, (FAMILY, caption_size).into_font().color(&BLACK))
        .margin(20)
        .x_label_area_size(60)
        .y_label_area_size(80)
        .build_cartesian_2d(x.0..x.1, y.0..y.1)?;
    chart
        .configure_mesh()
        .x_desc("year")
        .y_desc("CO2 (ppm)")
        .axis_desc_style((FAMILY, 22))
        .label_style((FAMILY, 18))
        .x_labels(16)
        .y_labels(if whole { 16 } else { 8 })
        .x_label_formatter(&|v| format!("{v:.0}"))
        .y_label_formatter(&|v| format!("{v:.0}"))
        .bold_line_style(BLACK.mix(0.12))
        .light_line_style(BLACK.mix(0.05))
        .max_light_lines(4)
        .draw()?;

    // the band first, under everything else: the upper edge left to right, then the
    // lower edge back
    let on = |ys: &'_ [f64]| -> Vec<(f64, f64)> {
        f.x.iter().zip(ys).filter(|(&t, _)| inside(t)).map(|(&t, &y)| (t, y)).collect()
    };
    let mut edge = on(f.hi);
    edge.extend(on(f.lo).iter().rev());
    chart.draw_series(std::iter::once(Polygon::new(edge, BAND.mix(0.35).filled())))?;

    // the observations and the mean: the mean up to the last observation, the forecast
    // from there on (sharing the point where the two meet, so that the curve has no gap).
    // Over the whole record the mean is drawn over the observations, which would hide
    // it; in the detail, the observations over the mean, each apart.
    let dots = f
        .obs_x
        .iter()
        .zip(f.obs_y)
        .filter(|(&t, _)| inside(t))
        .map(|(&x, &y)| Circle::new((x, y), dot, DATA.filled()));
    if whole {
        chart.draw_series(dots.clone())?;
    }
    let end = f.obs_x.iter().fold(f64::MIN, |m, &v| m.max(v));
    let mean = on(f.mean);
    let split = mean.iter().take_while(|&&(t, _)| t <= end).count();
    if split > 0 {
        chart.draw_series(LineSeries::new(mean[..split].to_vec(), FIT.stroke_width(2)))?;
    }
    chart.draw_series(LineSeries::new(
        mean[split.saturating_sub(1)..].to_vec(),
        FORECAST.stroke_width(2),
    ))?;
    if !whole {
        chart.draw_series(dots)?;
        return Ok(());
    }

    // the legend, in reading order rather than drawing order: an empty series per entry
    let none = std::iter::empty::<Circle<(f64, f64), i32>>;
    chart
        .draw_series(none())?
        .label(format!("observations ({})", grouped(f.obs_x.len())))
        .legend(|(x, y)| Circle::new((x + 12, y), 3, DATA.filled()));
    chart
        .draw_series(none())?
        .label("GP mean over the observations")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 24, y)], FIT.stroke_width(3)));
    chart
        .draw_series(none())?
        .label("GP forecast")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 24, y)], FORECAST.stroke_width(3)));
    chart
        .draw_series(none())?
        .label("95% predictive band")
        .legend(|(x, y)| Rectangle::new([(x, y - 7), (x + 24, y + 7)], BAND.mix(0.35).filled()));
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .margin(15)
        .label_font((FAMILY, 18))
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK.mix(0.4))
        .draw()?;
    Ok(())
}
