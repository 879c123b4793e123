//! The benchmark report (issue 12): numbers measured in one run in, the `BENCHMARKS.md`
//! section and its SVG plot out. Pure functions, so they are tested on fixed numbers
//! (`cargo test --manifest-path bench/Cargo.toml --lib`); `benches/report.rs` measures and
//! calls them.
//!
//! Units: times in seconds (printed as µs or ms), bandwidth in GB/s with 1 GB = 1e9 bytes,
//! ratios as `peer time / our time` (above 1: ours is faster).

use std::fmt::Write as _;

/// Where and when the numbers were measured.
#[derive(Clone, Debug, PartialEq)]
pub struct Machine {
    /// UTC date and time of the run, as printed (`2026-11-24 16:40 UTC`).
    pub date: String,
    /// The commit measured (`git rev-parse --short HEAD`), `-dirty` appended when the work tree
    /// had changes to tracked files other than the report's own outputs (`BENCHMARKS.md`,
    /// `bench/report.svg`).
    pub commit: String,
    /// Logical CPUs (`nproc`).
    pub cpus: usize,
    /// The CPU: `/proc/cpuinfo`'s `model name`, its `cpu family` and `model` numbers and the
    /// L2 and L3 sizes where Linux gives them (`AMD EPYC, family 26 model 2, L2 1024K a core,
    /// L3 32768K`).
    pub cpu: String,
    /// The compiler (`rustc -V`).
    pub rustc: String,
    /// Whether rayon's threads were pinned one per CPU (`pin_rayon_threads`).
    pub pinned: bool,
}

/// The probes, timed interleaved with the kernels: a read-only `f64` dot product on one and on
/// two threads, and a STREAM triad (`a = b + s·c`, bytes counted as 3 arrays), each over arrays
/// far larger than the caches (GB/s); and how much more work in registers two threads do than
/// one.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Probes {
    /// One-thread read bandwidth.
    pub read_1: f64,
    /// Two-thread read bandwidth.
    pub read_2: f64,
    /// STREAM triad bandwidth, one thread.
    pub triad: f64,
    /// Two threads' throughput over one thread's on work in registers alone (chains of
    /// multiply-adds, no memory traffic): 2.0 on two whole cores, less where the two CPUs
    /// share a core or the host takes time from them. A two-thread kernel on a matrix in
    /// cache gains at most this over its serial form.
    pub two_threads: f64,
}

/// Which probe a kernel's bandwidth is compared with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bound {
    /// The one-thread read probe.
    OneThread,
    /// The two-thread read probe (a parallel kernel).
    TwoThreads,
}

/// One kernel on one matrix: our implementation's median time, its bytes under the kernel's
/// bytes model, and each peer's median time from the same interleaved run.
#[derive(Clone, Debug, PartialEq)]
pub struct Measure {
    /// The matrix (`bcsstk16`, `kron(I40,bcsstk16) (synthetic, from HB/bcsstk16)`).
    pub matrix: String,
    /// The kernel (`SpMV f64`, `SpGEMM A·A`, ...).
    pub kernel: String,
    /// Our implementation (`Csr<f64> (u32) spmv`).
    pub ours: String,
    /// Our median time per call, seconds.
    pub seconds: f64,
    /// Bytes one call moves under the kernel's bytes model; `None` when the kernel has none
    /// (SpGEMM, sparse addition: their time is not bound by a read stream).
    pub bytes: Option<f64>,
    /// The probe the bandwidth is compared with.
    pub bound: Bound,
    /// Each peer (name, median seconds per call), in the order printed.
    pub peers: Vec<(String, f64)>,
    /// The probes timed in this measure's own rounds (its group's), which its percent of
    /// bound is taken against; `None`: the run's probes (the median over the groups).
    pub probes: Option<Probes>,
}

impl Measure {
    /// GB/s under the bytes model.
    pub fn gb_per_s(&self) -> Option<f64> {
        self.bytes.map(|b| b / self.seconds / 1e9)
    }

    /// Percent of the probe's bandwidth: of its own group's probes when it has them, else
    /// of `run`'s.
    pub fn percent_of(&self, run: &Probes) -> Option<f64> {
        let probes = self.probes.as_ref().unwrap_or(run);
        let bound = match self.bound {
            Bound::OneThread => probes.read_1,
            Bound::TwoThreads => probes.read_2,
        };
        self.gb_per_s().map(|g| 100.0 * g / bound)
    }
}

/// The report section's first and last lines: [`splice`] replaces what lies between them.
pub const BEGIN: &str = "<!-- report:begin (written by `cargo bench --manifest-path bench/Cargo.toml --bench report`) -->";
/// The line after the section.
pub const END: &str = "<!-- report:end -->";

/// A time in µs below a millisecond, else in ms (`123.4 µs`, `20.83 ms`).
pub fn time(seconds: f64) -> String {
    if seconds >= 1e-3 {
        format!("{:.2} ms", seconds * 1e3)
    } else {
        format!("{:.1} µs", seconds * 1e6)
    }
}

/// The markdown section (between [`BEGIN`] and [`END`], both included): the machine, the
/// probes, the bytes model of each kernel (`models`: kernel name and its model), then one table
/// row per measure and peer, and the plot `svg` (a path relative to `BENCHMARKS.md`).
pub fn markdown(
    machine: &Machine,
    probes: &Probes,
    models: &[(&str, &str)],
    measures: &[Measure],
    svg: &str,
) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{BEGIN}");
    let _ = writeln!(s, "## Report of one run\n");
    let _ = writeln!(
        s,
        "{}, commit `{}`, {} CPUs ({}), {}. Every time is the median of an interleaved round \
         robin (each implementation in turn, turns of about 2 ms, each turn after about 2 ms \
         of untimed calls{}) in one process; ratio = peer time / our time (above 1: ours is \
         faster).\n",
        machine.date,
        machine.commit,
        machine.cpus,
        machine.cpu,
        machine.rustc,
        if machine.pinned {
            "; rayon's threads pinned one per CPU"
        } else {
            ""
        }
    );
    let _ = writeln!(
        s,
        "Bandwidth probes (timed in the same rounds as the kernels; the median over the \
         groups): read one thread {:.1} GB/s, two threads {:.1} GB/s, STREAM triad {:.1} GB/s \
         (1 GB = 1e9 bytes). Each row's % of bound is of the probe timed in its own group's \
         rounds. The probes read DRAM: a matrix that stays in cache (cryg2500, bcsstk16) runs \
         past 100% of them. Two threads did {:.2}x one thread's work in registers (chains of \
         multiply-adds, timed in the same rounds; 2.00 on two whole cores): a two-thread row \
         gives its own group's figure after its %, the most that kernel can gain over its \
         serial form where memory does not bind it.\n",
        probes.read_1, probes.read_2, probes.triad, probes.two_threads
    );
    let _ = writeln!(s, "Bytes models:\n");
    for (kernel, model) in models {
        let _ = writeln!(s, "- {kernel}: {model}");
    }
    let _ = writeln!(
        s,
        "\n| matrix | kernel | ours | time | GB/s | % of bound | peer | peer time | ratio |"
    );
    let _ = writeln!(s, "|---|---|---|---:|---:|---:|---|---:|---:|");
    for m in measures {
        let gbs = m.gb_per_s().map_or("—".into(), |g| format!("{g:.1}"));
        let pct = m.percent_of(probes).map_or("—".into(), |p| match m.bound {
            Bound::OneThread => format!("{p:.0}%"),
            Bound::TwoThreads => format!(
                "{p:.0}% (2 threads; {:.2}x)",
                m.probes.as_ref().unwrap_or(probes).two_threads
            ),
        });
        let head = format!(
            "| {} | {} | {} | {} | {gbs} | {pct} |",
            m.matrix,
            m.kernel,
            m.ours,
            time(m.seconds)
        );
        if m.peers.is_empty() {
            let _ = writeln!(s, "{head} — | — | — |");
        }
        for (peer, t) in &m.peers {
            let _ = writeln!(s, "{head} {peer} | {} | {:.2} |", time(*t), t / m.seconds);
        }
    }
    let _ = writeln!(s, "\n![ratio of each peer's time to ours]({svg})");
    let _ = write!(s, "{END}");
    s
}

/// `doc` with the text from [`BEGIN`] to [`END`] replaced by `section` (which holds both); when
/// `doc` has no such pair, `section` is inserted after the first line (the title) with a blank
/// line on each side. Everything outside the markers is kept byte for byte.
pub fn splice(doc: &str, section: &str) -> String {
    if let (Some(b), Some(e)) = (doc.find(BEGIN), doc.find(END)) {
        if b < e {
            let end = e + END.len();
            return format!("{}{section}{}", &doc[..b], &doc[end..]);
        }
    }
    match doc.find('\n') {
        Some(nl) => format!("{}\n{section}\n{}", &doc[..=nl], &doc[nl + 1..]),
        None if doc.is_empty() => format!("{section}\n"),
        None => format!("{doc}\n\n{section}\n"),
    }
}

/// The SVG bar chart of every ratio (one bar per measure and peer, `peer / ours`, a line at
/// 1): drawn with plotters into a string.
///
/// Errors: plotters' drawing error, as text.
pub fn svg(measures: &[Measure]) -> Result<String, String> {
    use plotters::prelude::*;
    let bars: Vec<(String, f64)> = measures
        .iter()
        .flat_map(|m| {
            m.peers.iter().map(move |(peer, t)| {
                (
                    format!("{} {} vs {peer}", short(&m.matrix), m.kernel),
                    t / m.seconds,
                )
            })
        })
        .collect();
    let mut out = String::new();
    {
        let height = 80 + 22 * bars.len() as u32;
        let root = SVGBackend::with_string(&mut out, (900, height)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let top = bars.iter().map(|b| b.1).fold(1.0, f64::max) * 1.1;
        let n = bars.len().max(1) as i32;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                "peer time / our time (> 1: ours faster)",
                ("sans-serif", 16),
            )
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(420)
            .build_cartesian_2d(0.0..top, (0..n).into_segmented())
            .map_err(|e| e.to_string())?;
        let labels: Vec<String> = bars.iter().map(|b| b.0.clone()).collect();
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(bars.len().max(1))
            .y_label_formatter(&|v| match v {
                SegmentValue::CenterOf(i) => labels.get(*i as usize).cloned().unwrap_or_default(),
                _ => String::new(),
            })
            .label_style(("sans-serif", 11))
            .draw()
            .map_err(|e| e.to_string())?;
        chart
            .draw_series(bars.iter().enumerate().map(|(i, (_, r))| {
                let color = if *r >= 1.0 {
                    GREEN.mix(0.6)
                } else {
                    RED.mix(0.6)
                };
                Rectangle::new(
                    [
                        (0.0, SegmentValue::Exact(i as i32)),
                        (*r, SegmentValue::Exact(i as i32 + 1)),
                    ],
                    color.filled(),
                )
            }))
            .map_err(|e| e.to_string())?;
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(1.0, SegmentValue::Exact(0)), (1.0, SegmentValue::Exact(n))],
                BLACK,
            )))
            .map_err(|e| e.to_string())?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(out)
}

/// A matrix label without its parenthesised note (`kron(I40,bcsstk16)`).
fn short(matrix: &str) -> &str {
    match matrix.find(" (") {
        Some(k) => &matrix[..k],
        None => matrix,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn machine() -> Machine {
        Machine {
            date: "2026-11-24 16:40 UTC".into(),
            commit: "abc1234".into(),
            cpus: 2,
            cpu: "AMD EPYC".into(),
            rustc: "rustc 1.95.0".into(),
            pinned: true,
        }
    }

    fn probes() -> Probes {
        Probes {
            read_1: 20.0,
            read_2: 30.0,
            triad: 15.0,
            two_threads: 1.5,
        }
    }

    fn spmv() -> Measure {
        Measure {
            matrix: "bcsstk16".into(),
            kernel: "SpMV f64".into(),
            ours: "Csr spmv".into(),
            seconds: 100e-6,
            bytes: Some(1.6e6),
            bound: Bound::OneThread,
            peers: vec![("sprs".into(), 150e-6), ("faer".into(), 2.5e-3)],
            probes: None,
        }
    }

    #[test]
    fn rows_carry_bandwidth_percent_and_ratios() {
        let par = Measure {
            kernel: "SpMV f64, 2 threads".into(),
            ours: "Csr spmv_par".into(),
            bound: Bound::TwoThreads,
            peers: vec![],
            ..spmv()
        };
        let mul = Measure {
            kernel: "SpGEMM A·A".into(),
            ours: "spgemm".into(),
            seconds: 0.02083,
            bytes: None,
            peers: vec![("sprs".into(), 0.04501)],
            ..spmv()
        };
        // a group whose own probes read 25 GB/s (one thread): 16 GB/s is 64% of it
        let own = Measure {
            matrix: "kron".into(),
            peers: vec![],
            probes: Some(Probes {
                read_1: 25.0,
                ..probes()
            }),
            ..spmv()
        };
        let md = markdown(
            &machine(),
            &probes(),
            &[("SpMV f64", "nnz·12 + (rows+1)·4 + x + y")],
            &[spmv(), par, mul, own],
            "bench/report.svg",
        );
        let lines: Vec<&str> = md.lines().collect();
        assert_eq!(lines[0], BEGIN);
        assert_eq!(*lines.last().unwrap(), END);
        // 1.6e6 bytes in 100 µs: 16 GB/s, 80% of 20 GB/s; 53% of the two-thread 30 GB/s
        assert!(lines.contains(
            &"| bcsstk16 | SpMV f64 | Csr spmv | 100.0 µs | 16.0 | 80% | sprs | 150.0 µs | 1.50 |"
        ));
        assert!(lines.contains(
            &"| bcsstk16 | SpMV f64 | Csr spmv | 100.0 µs | 16.0 | 80% | faer | 2.50 ms | 25.00 |"
        ));
        assert!(lines.contains(
            &"| bcsstk16 | SpMV f64, 2 threads | Csr spmv_par | 100.0 µs | 16.0 | 53% (2 threads; 1.50x) | — | — | — |"
        ));
        assert!(lines.contains(
            &"| bcsstk16 | SpGEMM A·A | spgemm | 20.83 ms | — | — | sprs | 45.01 ms | 2.16 |"
        ));
        assert!(
            lines.contains(&"| kron | SpMV f64 | Csr spmv | 100.0 µs | 16.0 | 64% | — | — | — |")
        );
        assert!(lines.contains(&"- SpMV f64: nnz·12 + (rows+1)·4 + x + y"));
        assert!(
            md.contains("read one thread 20.0 GB/s, two threads 30.0 GB/s, STREAM triad 15.0 GB/s")
        );
        assert!(md.contains("commit `abc1234`, 2 CPUs (AMD EPYC), rustc 1.95.0"));
        assert!(md.contains("Two threads did 1.50x one thread's work in registers"));
        assert!(md.contains("![ratio of each peer's time to ours](bench/report.svg)"));
    }

    #[test]
    fn splice_replaces_only_between_the_markers() {
        let doc = format!("# Benchmarks\n\nbefore\n{BEGIN}\nold\n{END}\nafter\n");
        let out = splice(&doc, &format!("{BEGIN}\nnew\n{END}"));
        assert_eq!(
            out,
            format!("# Benchmarks\n\nbefore\n{BEGIN}\nnew\n{END}\nafter\n")
        );
        // once more: the same document
        assert_eq!(splice(&out, &format!("{BEGIN}\nnew\n{END}")), out);
    }

    #[test]
    fn splice_adds_the_section_after_the_title() {
        let section = format!("{BEGIN}\nnew\n{END}");
        assert_eq!(
            splice("# Benchmarks\n\nhand-written\n", &section),
            format!("# Benchmarks\n\n{section}\n\nhand-written\n")
        );
        assert_eq!(splice("", &section), format!("{section}\n"));
        // an END before BEGIN is not a pair
        let odd = format!("# T\n{END}\n{BEGIN}\n");
        assert_eq!(
            splice(&odd, &section),
            format!("# T\n\n{section}\n{END}\n{BEGIN}\n")
        );
    }

    #[test]
    fn svg_has_one_bar_per_peer() {
        let svg = svg(&[spmv()]).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..40.min(svg.len())]);
        assert!(svg.contains("bcsstk16 SpMV f64 vs sprs"));
        assert!(svg.contains("bcsstk16 SpMV f64 vs faer"));
        // two bars (filled rectangles) besides the background
        assert_eq!(svg.matches("<rect").count(), 3, "{svg}");
    }
}
