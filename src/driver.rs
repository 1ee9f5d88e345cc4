//! Convolution problems from MIOpenDriver command lines: the line MIOpen logs for every
//! convolution it runs (`MIOPEN_ENABLE_LOGGING_CMD=1`), pasted as is:
//!
//! ```text
//! ./bin/MIOpenDriver convfp16 -n 32 -c 64 -H 56 -W 56 -k 64 -y 3 -x 3 -p 1 -q 1 -u 1 -v 1 -l 1 -j 1
//!     --in_layout NHWC --fil_layout NHWC --out_layout NHWC -m conv -g 1 -F 1 -t 1
//! ```
//!
//! The word after the optional program path names the data type (`conv` FP32, `convfp16`,
//! `convbfp16`, `convint8`); flags take MIOpenDriver's short or long names and its defaults.
//! Flags that only say how MIOpenDriver runs (`-t`, `-V`, `-i`, `-s`, `-S`, data files, ...)
//! are accepted and listed as ignored; a flag kiln cannot honour (a transposed convolution,
//! several directions at once, a padding mode or value) is an error naming the flag and value.
//! Tokens that are not MIOpenDriver's flags are handed back, for the caller's own options.

use std::fmt;

use kiln_format::{ConvProblem, ConvSpec, DataType, Direction, Fusion, Layout, MathMode};

/// A MIOpenDriver flag: its short and long names.
struct Flag {
    short: char,
    long: &'static str,
    role: Role,
}

/// What a flag sets.
#[derive(Clone, Copy, PartialEq)]
enum Role {
    /// A number of the problem (index into [`Numbers`]).
    Number(usize),
    /// A tensor's layout (0 input, 1 filter, 2 output).
    Layout(usize),
    /// `-m`: `conv` only.
    Mode,
    /// `-F`: the direction.
    Direction,
    /// `-z`: `default` only.
    PadMode,
    /// Must be 0 (`-r`, transposed output padding, `-Z`), or 1 (`-L`).
    Fixed(i64),
    /// How MIOpenDriver runs, not what it computes.
    RunOption,
}

/// Numbers indexed by [`Role::Number`], with MIOpenDriver's defaults.
const NUMBER_NAMES: [&str; 19] = [
    "batchsize",
    "in_channels",
    "in_d",
    "in_h",
    "in_w",
    "out_channels",
    "fil_d",
    "fil_h",
    "fil_w",
    "pad_d",
    "pad_h",
    "pad_w",
    "conv_stride_d",
    "conv_stride_h",
    "conv_stride_w",
    "dilation_d",
    "dilation_h",
    "dilation_w",
    "group_count",
];
const DEFAULTS: [u32; 19] = [
    100, 3, 32, 32, 32, 32, 3, 3, 3, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1,
];
/// Indices beyond [`NUMBER_NAMES`].
const SPATIAL_DIM: usize = 19;
const BIAS: usize = 20;

const fn number(short: char, long: &'static str, i: usize) -> Flag {
    Flag {
        short,
        long,
        role: Role::Number(i),
    }
}

const fn other(short: char, long: &'static str, role: Role) -> Flag {
    Flag { short, long, role }
}

/// MIOpenDriver's convolution flags (its `conv_driver.hpp` table).
const FLAGS: [Flag; 44] = [
    number('n', "batchsize", 0),
    number('c', "in_channels", 1),
    number('!', "in_d", 2),
    number('H', "in_h", 3),
    number('W', "in_w", 4),
    number('k', "out_channels", 5),
    number('@', "fil_d", 6),
    number('y', "fil_h", 7),
    number('x', "fil_w", 8),
    number('$', "pad_d", 9),
    number('p', "pad_h", 10),
    number('q', "pad_w", 11),
    number('#', "conv_stride_d", 12),
    number('u', "conv_stride_h", 13),
    number('v', "conv_stride_w", 14),
    number('^', "dilation_d", 15),
    number('l', "dilation_h", 16),
    number('j', "dilation_w", 17),
    number('g', "group_count", 18),
    number('_', "spatial_dim", SPATIAL_DIM),
    number('b', "bias", BIAS),
    other('I', "in_layout", Role::Layout(0)),
    other('f', "fil_layout", Role::Layout(1)),
    other('O', "out_layout", Role::Layout(2)),
    other('m', "mode", Role::Mode),
    other('F', "forw", Role::Direction),
    other('z', "pad_mode", Role::PadMode),
    other('r', "pad_val", Role::Fixed(0)),
    other('%', "trans_output_pad_d", Role::Fixed(0)),
    other('Y', "trans_output_pad_h", Role::Fixed(0)),
    other('X', "trans_output_pad_w", Role::Fixed(0)),
    other('Z', "tensor_vect", Role::Fixed(0)),
    other('L', "vector_length", Role::Fixed(1)),
    other('t', "time", Role::RunOption),
    other('V', "verify", Role::RunOption),
    other('i', "iter", Role::RunOption),
    other('w', "wall", Role::RunOption),
    other('s', "search", Role::RunOption),
    other('P', "printconv", Role::RunOption),
    other('o', "dump_output", Role::RunOption),
    other('C', "verification_cache", Role::RunOption),
    other('S', "solution", Role::RunOption),
    other('d', "in_data", Role::RunOption),
    other('e', "weights", Role::RunOption),
];

/// Data-file flags MIOpenDriver also takes (run options: kiln makes its own inputs).
const MORE_RUN_OPTIONS: [(char, &str); 2] = [('a', "in_bias"), ('D', "dout_data")];

/// Why a MIOpenDriver line does not describe a problem kiln can take.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DriverError {
    /// The token (or flag) at fault.
    pub token: String,
    /// What is wrong with it.
    pub reason: String,
}

impl fmt::Display for DriverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MIOpenDriver line: {}: {}", self.token, self.reason)
    }
}

impl std::error::Error for DriverError {}

/// A parsed MIOpenDriver convolution command.
#[derive(Clone, Debug, PartialEq)]
pub struct DriverCommand {
    /// The problem it describes.
    pub problem: ConvProblem,
    /// MIOpenDriver's run options it carried (`-t 1`, `-V 0`, ...), which kiln ignores.
    pub ignored: Vec<String>,
    /// Tokens that are not MIOpenDriver's (the caller's own options), in order.
    pub rest: Vec<String>,
}

/// The data type a MIOpenDriver base word names (`conv`, `convfp16`, `convbfp16`,
/// `convint8`).
pub fn base_word_type(word: &str) -> Option<DataType> {
    match word {
        "conv" => Some(DataType::Fp32),
        "convfp16" => Some(DataType::Fp16),
        "convbfp16" => Some(DataType::Bf16),
        "convint8" => Some(DataType::Int8),
        _ => None,
    }
}

/// Whether `args` starts like a MIOpenDriver convolution command: a base word, or a program
/// path ending in `MIOpenDriver` followed by one.
pub fn looks_like_driver_line<S: AsRef<str>>(args: &[S]) -> bool {
    match args.first().map(AsRef::as_ref) {
        Some(a) if a.ends_with("MIOpenDriver") => true,
        Some(a) => base_word_type(a).is_some(),
        None => false,
    }
}

fn bad(token: &str, reason: impl Into<String>) -> DriverError {
    DriverError {
        token: token.to_string(),
        reason: reason.into(),
    }
}

/// The flag a token names (`-n`, `--batchsize`), if it is MIOpenDriver's.
fn flag_of(token: &str) -> Option<Role> {
    let role_of = |f: &Flag| f.role;
    if let Some(long) = token.strip_prefix("--") {
        return FLAGS
            .iter()
            .find(|f| f.long == long)
            .map(role_of)
            .or_else(|| {
                MORE_RUN_OPTIONS
                    .iter()
                    .any(|(_, l)| *l == long)
                    .then_some(Role::RunOption)
            });
    }
    let mut chars = token.strip_prefix('-')?.chars();
    let (Some(c), None) = (chars.next(), chars.next()) else {
        return None;
    };
    FLAGS
        .iter()
        .find(|f| f.short == c)
        .map(role_of)
        .or_else(|| {
            MORE_RUN_OPTIONS
                .iter()
                .any(|(s, _)| *s == c)
                .then_some(Role::RunOption)
        })
}

/// Parses a MIOpenDriver convolution command (the tokens after `MIOpenDriver`, or with it).
pub fn parse<S: AsRef<str>>(args: &[S]) -> Result<DriverCommand, DriverError> {
    let mut tokens = args.iter().map(AsRef::as_ref).peekable();
    if tokens.peek().is_some_and(|t| t.ends_with("MIOpenDriver")) {
        tokens.next();
    }
    let word = tokens
        .next()
        .ok_or_else(|| bad("(empty)", "expected conv, convfp16, convbfp16 or convint8"))?;
    let dtype = base_word_type(word).ok_or_else(|| {
        bad(
            word,
            "not a convolution command (conv, convfp16, convbfp16 or convint8)",
        )
    })?;
    let mut numbers = [0u32; 21];
    numbers[..19].copy_from_slice(&DEFAULTS);
    numbers[SPATIAL_DIM] = 2;
    let mut layouts: [Option<Layout>; 3] = [None; 3];
    let mut direction: Option<Direction> = None;
    let (mut ignored, mut rest) = (Vec::new(), Vec::new());
    while let Some(token) = tokens.next() {
        let Some(role) = flag_of(token) else {
            rest.push(token.to_string());
            continue;
        };
        let value = tokens.next().ok_or_else(|| bad(token, "needs a value"))?;
        let int = || -> Result<i64, DriverError> {
            value
                .parse::<i64>()
                .map_err(|_| bad(token, format!("'{value}' is not an integer")))
        };
        match role {
            Role::Number(i) => {
                let v = int()?;
                numbers[i] =
                    u32::try_from(v).map_err(|_| bad(token, format!("{v} is out of range")))?;
            }
            Role::Layout(i) => {
                layouts[i] = Some(Layout::from_name(value).ok_or_else(|| {
                    bad(
                        token,
                        format!("layout '{value}' (NCHW, NHWC, NCDHW or NDHWC)"),
                    )
                })?);
            }
            Role::Mode => {
                if value != "conv" {
                    return Err(bad(
                        token,
                        format!(
                            "mode '{value}': kiln runs convolutions (conv), not transposed ones"
                        ),
                    ));
                }
            }
            Role::Direction => {
                direction = Some(match int()? {
                    1 => Direction::Forward,
                    2 => Direction::BackwardData,
                    4 => Direction::BackwardWeights,
                    v => {
                        return Err(bad(
                            token,
                            format!("{v}: one direction per problem (1 forward, 2 backward data, 4 backward weights)"),
                        ))
                    }
                });
            }
            Role::PadMode => {
                if value != "default" {
                    return Err(bad(
                        token,
                        format!("padding mode '{value}': give the padding with -p/-q instead"),
                    ));
                }
            }
            Role::Fixed(want) => {
                if int()? != want {
                    return Err(bad(
                        token,
                        format!("'{value}': kiln supports only {want} here"),
                    ));
                }
            }
            Role::RunOption => ignored.push(format!("{token} {value}")),
        }
    }
    let spatial_dims = numbers[SPATIAL_DIM] as u8;
    if !(2..=3).contains(&numbers[SPATIAL_DIM]) {
        return Err(bad(
            "--spatial_dim",
            format!("{}: 2 or 3 spatial dimensions", numbers[SPATIAL_DIM]),
        ));
    }
    let direction = direction.ok_or_else(|| {
        bad(
            "-F",
            "missing: MIOpenDriver's default runs every direction; give one (-F 1 forward, 2 backward data, 4 backward weights)",
        )
    })?;
    let default_layout = if spatial_dims == 3 {
        Layout::Ncdhw
    } else {
        Layout::Nchw
    };
    let layout = |i: usize| layouts[i].unwrap_or(default_layout);
    let n = |name: &str| numbers[NUMBER_NAMES.iter().position(|&x| x == name).unwrap_or(0)];
    // A 2-D problem's depth is 1 whatever MIOpenDriver's 3-D defaults say.
    let depth = |name: &str, flat: u32| if spatial_dims == 3 { n(name) } else { flat };
    let spec = ConvSpec {
        spatial_dims,
        n: n("batchsize"),
        c: n("in_channels"),
        k: n("out_channels"),
        input: [depth("in_d", 1), n("in_h"), n("in_w")],
        filter: [depth("fil_d", 1), n("fil_h"), n("fil_w")],
        pad: [depth("pad_d", 0), n("pad_h"), n("pad_w")],
        stride: [
            depth("conv_stride_d", 1),
            n("conv_stride_h"),
            n("conv_stride_w"),
        ],
        dilation: [depth("dilation_d", 1), n("dilation_h"), n("dilation_w")],
        groups: n("group_count"),
        layouts: [layout(0), layout(1), layout(2)],
        data_types: [dtype; 3],
        cast_types: [None; 3],
        direction,
        bias: numbers[BIAS],
        math: MathMode::Default,
        fusion: Fusion::NONE,
    };
    let problem = ConvProblem::new(spec).map_err(|e| bad(word, e.to_string()))?;
    Ok(DriverCommand {
        problem,
        ignored,
        rest,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(line: &str) -> String {
        let args: Vec<&str> = line.split_whitespace().collect();
        parse(&args)
            .unwrap_or_else(|e| panic!("{line}: {e}"))
            .problem
            .find_db_key()
            .to_string()
    }

    #[test]
    fn logged_lines_give_the_flag_forms_key() {
        // Lines as MIOpen logs them (driver_arguments.cpp's format) and as its docs show them.
        for (line, want) in [
            (
                "./bin/MIOpenDriver conv -n 128 -c 3 -H 32 -W 32 -k 64 -y 3 -x 3 -p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 1 -t 1",
                "3-32-32-3x3-64-32-32-128-1x1-1x1-1x1-0-NCHW-FP32-F",
            ),
            (
                "MIOpenDriver convfp16 -n 32 -c 256 -H 56 -W 56 -k 64 -y 1 -x 1 -p 0 -q 0 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 1 -t 1",
                "256-56-56-1x1-64-56-56-32-0x0-1x1-1x1-0-NCHW-FP16-F",
            ),
            (
                "convfp16 -n 1 -c 64 -H 56 -W 56 -k 64 -y 3 -x 3 -p 1 -q 1 -u 1 -v 1 -l 1 -j 1 --in_layout NHWC --fil_layout NHWC --out_layout NHWC -m conv -g 1 -F 1 -t 1",
                "64-56-56-3x3-64-56-56-1-1x1-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F",
            ),
            (
                "convbfp16 -n 16 -c 512 -H 14 -W 14 -k 512 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -l 1 -j 1 -m conv -g 32 -F 2 -t 1",
                // Backward data: MIOpen's key reads the direction's input (dy) first.
                "512-7-7-3x3-512-14-14-16-1x1-2x2-1x1-0-NCHW-BF16-B_g32",
            ),
            (
                "convint8 -n 8 -c 64 -H 28 -W 28 -k 128 -y 1 -x 1 -p 0 -q 0 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 1 -t 1",
                "64-28-28-1x1-128-28-28-8-0x0-1x1-1x1-0-NCHW-INT8-F",
            ),
            (
                "conv -n 4 -c 32 --in_d 16 -H 16 -W 16 -k 32 --fil_d 3 -y 3 -x 3 --pad_d 1 -p 1 -q 1 --conv_stride_d 1 -u 1 -v 1 --dilation_d 1 -l 1 -j 1 --spatial_dim 3 -m conv -g 1 -F 4 -t 1",
                "32-16-16-16-3x3x3-32-16-16-16-4-1x1x1-1x1x1-1x1x1-0-NCDHW-FP32-W",
            ),
            (
                "conv --batchsize 2 --in_channels 16 --in_h 10 --in_w 12 --out_channels 8 --fil_h 5 --fil_w 3 --pad_h 2 --pad_w 1 --conv_stride_h 1 --conv_stride_w 1 --dilation_h 2 --dilation_w 1 --group_count 1 --forw 1",
                "16-10-12-5x3-8-6-12-2-2x1-1x1-2x1-0-NCHW-FP32-F",
            ),
            (
                "./MIOpenDriver conv -n 100 -c 3 -H 32 -W 32 -k 32 -y 5 -x 5 -p 2 -q 2 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 1 -t 1 -V 0 -i 10 -s 0 -S 0",
                "3-32-32-5x5-32-32-32-100-2x2-1x1-1x1-0-NCHW-FP32-F",
            ),
            (
                "convfp16 -n 64 -c 128 -H 28 -W 28 -k 128 -y 3 -x 3 -p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -m conv -g 128 -F 1 -t 1",
                "128-28-28-3x3-128-28-28-64-1x1-1x1-1x1-0-NCHW-FP16-F_g128",
            ),
            (
                "conv -n 10 -c 64 -H 7 -W 7 -k 256 -y 1 -x 1 -p 0 -q 0 -u 1 -v 1 -l 1 -j 1 -b 1 -m conv -g 1 -F 1",
                "64-7-7-1x1-256-7-7-10-0x0-1x1-1x1-1-NCHW-FP32-F",
            ),
            // MIOpenDriver's defaults: n 100, c 3, 32x32 input, 32 outputs, 3x3 filter.
            ("conv -F 1", "3-32-32-3x3-32-30-30-100-0x0-1x1-1x1-0-NCHW-FP32-F"),
        ] {
            assert_eq!(key(line), want, "{line}");
        }
    }

    #[test]
    fn the_flag_form_and_the_line_agree() {
        let line = "convfp16 -n 32 -c 64 -H 56 -W 56 -k 256 -y 1 -x 1 -p 0 -q 0 -u 1 -v 1 -l 1 -j 1 --in_layout NHWC --fil_layout NHWC --out_layout NHWC -m conv -g 1 -F 1 -t 1";
        let args: Vec<&str> = line.split_whitespace().collect();
        let from_line = parse(&args).unwrap().problem;
        let flags = ConvProblem::new(ConvSpec {
            n: 32,
            c: 64,
            k: 256,
            input: [1, 56, 56],
            filter: [1, 1, 1],
            layouts: [Layout::Nhwc; 3],
            data_types: [DataType::Fp16; 3],
            ..ConvSpec::default()
        })
        .unwrap();
        assert_eq!(from_line.find_db_key(), flags.find_db_key());
    }

    #[test]
    fn run_options_are_listed_and_other_tokens_handed_back() {
        let args = [
            "conv", "-n", "1", "--target", "h100", "-F", "1", "-t", "1", "--json", "-V", "0",
        ];
        let c = parse(&args).unwrap();
        assert_eq!(c.ignored, ["-t 1", "-V 0"]);
        assert_eq!(c.rest, ["--target", "h100", "--json"]);
        assert!(looks_like_driver_line(&[
            "/opt/rocm/bin/MIOpenDriver",
            "conv"
        ]));
        assert!(looks_like_driver_line(&["convbfp16"]));
        assert!(!looks_like_driver_line(&[
            "64-56-56-3x3-64-56-56-1-1x1-1x1-1x1-0-NCHW-FP32-F"
        ]));
    }

    #[test]
    fn what_kiln_cannot_take_is_named() {
        for (line, token, words) in [
            ("conv -n 1 -m trans -F 1", "-m", "transposed"),
            ("conv -n 1 -F 3", "-F", "one direction"),
            ("conv -n 1", "-F", "missing"),
            ("conv -n x -F 1", "-n", "not an integer"),
            ("conv -n -5 -F 1", "-n", "out of range"),
            (
                "conv -n 1 -F 1 --in_layout NCWH",
                "--in_layout",
                "layout 'NCWH'",
            ),
            ("conv -n 1 -F 1 -z same", "-z", "padding mode"),
            ("conv -n 1 -F 1 -r 3", "-r", "only 0"),
            ("conv -n 1 -F", "-F", "needs a value"),
            ("pool -n 1", "pool", "not a convolution command"),
            ("conv -n 1 -F 1 --spatial_dim 4", "--spatial_dim", "2 or 3"),
            ("conv -c 0 -F 1", "conv", ""),
        ] {
            let args: Vec<&str> = line.split_whitespace().collect();
            let e = parse(&args).unwrap_err();
            assert_eq!(e.token, token, "{line}: {e}");
            assert!(e.to_string().contains(words), "{line}: {e}");
        }
    }
}
