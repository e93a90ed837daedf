import Foundation

/// How libx264 or libx265 is told to hold back no more than a number of
/// frames (what a power cut then loses on top of the fragment being built).
///
/// What each holds once `encode` returns, measured (EncoderDelayTests) and as
/// the libraries account for it: x264 holds the larger of its B-frames and
/// its rate-control lookahead, one frame per frame thread but the first, its
/// sync lookahead (one frame when frame threads run), and one frame to time
/// variable-rate input (not when bounded: its rate control then follows the
/// nominal rate, `force-cfr`); x265 holds nothing without lookahead, else its
/// lookahead plus its B-frames plus three, and one frame per frame thread but
/// the first.
///
/// Bounded, neither takes B-frames or a lookahead, whatever the preset: a
/// recording's encoder starts before the frames' interval is measured,
/// holding none, and B-frames are in the stream's headers, which a change
/// of threads at a keyframe must keep (`HeldFramesGovernor`). The frames it
/// may hold go to threads. Where all of them fit, x264 keeps its own frame
/// threads and sync lookahead (bench/record-vs-ffmpeg on two cores: 0.91x
/// ffmpeg's CPU per frame with it, 0.99x without). Otherwise the bound is
/// reached in this order, each step only when the one before is not enough:
/// 1. no sync lookahead (x264);
/// 2. x264: fewer frame threads, while they are still at least one per core;
/// 3. threads over parts of a frame instead of over frames (x264's sliced
///    threads, x265's single frame thread with its wavefront rows): all
///    cores still work, nothing is held for them (x264's slices encode about
///    a tenth slower than its frame threads: bench/encoder-delay).
struct DelayBound: Equatable {
    /// Options for `x264-params` / `x265-params`; nil: nothing to change.
    let parameters: String?
    /// Frames the encoder holds with them.
    let heldFrames: Int

    /// B-frames and lookahead of each preset (x264's and x265's preset tables).
    static func presetDelay(encoder: String, preset: String) -> (bframes: Int, lookahead: Int) {
        if encoder == "libx265" {
            switch preset {
            case "ultrafast": return (3, 5)
            case "superfast": return (3, 10)
            case "veryfast", "faster", "fast": return (4, 15)
            case "medium": return (4, 20)
            case "slow": return (4, 25)
            case "slower", "veryslow": return (8, 40)
            default: return (8, 60)
            }
        }
        switch preset {
        case "ultrafast": return (0, 0)
        case "superfast": return (3, 0)
        case "veryfast": return (3, 10)
        case "faster": return (3, 20)
        case "fast": return (3, 30)
        case "medium": return (3, 40)
        case "slow": return (3, 50)
        case "slower": return (3, 60)
        case "veryslow": return (8, 60)
        default: return (16, 60)
        }
    }

    /// Frame threads the encoder starts when asked for `threads` (0: its own choice).
    static func frameThreads(encoder: String, threads: Int, cores: Int) -> Int {
        if threads > 0 { return threads }
        // x264: 1.5 per core; x265: up to 6, chosen from the cores.
        return encoder == "libx265" ? min(6, max(1, cores)) : max(1, cores * 3 / 2)
    }

    init(encoder: String, preset: String, threads: Int, maxFrames: Int,
         cores: Int = ProcessInfo.processInfo.activeProcessorCount) {
        let (bframes, lookahead) = Self.presetDelay(encoder: encoder, preset: preset)
        let frameThreads = Self.frameThreads(encoder: encoder, threads: threads, cores: cores)
        // No B-frames and no lookahead, said only where the preset has them.
        let noLookahead = bframes > 0 || lookahead > 0 ? "bframes=0:rc-lookahead=0" : nil
        func joined(_ options: String?...) -> String? {
            let given = options.compactMap { $0 }
            return given.isEmpty ? nil : given.joined(separator: ":")
        }
        if encoder == "libx265" {
            // Without x265's settings in the headers (its "info" SEI names
            // its frame threads), so that they are the same whichever run.
            if frameThreads - 1 <= maxFrames {
                (parameters, heldFrames) = (joined("info=0", noLookahead), frameThreads - 1)
            } else {
                (parameters, heldFrames) = (joined("info=0:frame-threads=1", noLookahead), 0)
            }
            return
        }
        // Constant-rate timing always, so that the stream's headers are the
        // same whichever threads run (the recording can change them at a
        // keyframe: `HeldFramesGovernor`). The sync lookahead without
        // B-frames is one frame, with frame threads.
        let timing = "sync-lookahead=0:force-cfr=1", sync = frameThreads > 1 ? 1 : 0
        if frameThreads - 1 + sync <= maxFrames {
            (parameters, heldFrames) = (joined("force-cfr=1", noLookahead), frameThreads - 1 + sync)
        } else if frameThreads - 1 <= maxFrames {
            (parameters, heldFrames) = (joined(timing, noLookahead), frameThreads - 1)
        } else if maxFrames + 1 >= max(2, cores) {
            (parameters, heldFrames) = (joined(timing, "threads=\(maxFrames + 1)", noLookahead), maxFrames)
        } else {
            (parameters, heldFrames) = (joined(timing, "sliced-threads=1", noLookahead), 0)
        }
    }
}
