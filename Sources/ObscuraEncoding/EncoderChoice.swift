import CFFmpeg
import CV4L2
import Foundation
import ObscuraConversion
import ObscuraMedia
import ObscuraSystem
#if canImport(Glibc)
import Glibc
#endif

/// Which kind of encoder to try, in a preference list.
public enum EncoderKind: String, Sendable, CaseIterable, CustomStringConvertible {
    /// A V4L2 memory-to-memory hardware encoder (board profiles: "v4l2m2m").
    case hardware = "v4l2m2m"
    /// libavcodec in software (libx264, libx265, prores_aw, mjpeg).
    case software = "libavcodec"
    public var description: String { rawValue }

    /// Reads a profile's or a command line's name ("v4l2m2m", "hardware",
    /// "libx264", "software", …).
    public init?(name: String) {
        switch name.lowercased() {
        case "v4l2m2m", "hardware", "v4l2": self = .hardware
        case "libavcodec", "software", "libx264", "libx265", "prores_aw", "mjpeg": self = .software
        default: return nil
        }
    }
}

/// Picks the encoder for a recording from a preference list, falling back
/// in order, and says which and why in one line.
public enum VideoEncoders {
    public static func make(settings: VideoEncoderSettings, firstFrame frame: VideoFrame, preference: [EncoderKind],
                            copies: CopyCounter) throws -> (encoder: any VideoEncoder, choice: String) {
        var declined: [String] = []
        for kind in preference.isEmpty ? [.software] : preference {
            switch kind {
            case .hardware:
                do {
                    // Camera buffers (dmabufs the CPU maps under sync) are imported; other memory is copied.
                    let importable = frame.needsCPUSync && !frame.dmabufs.isEmpty
                    let encoder = try V4L2MemoryToMemoryEncoder(settings: settings, input: frame.format,
                                                                stride: frame.planes.first?.stride ?? 0,
                                                                importDmabufs: importable, copies: copies)
                    var why = "hardware encoder \(encoder.node): "
                        + (encoder.importsDmabufs ? "camera dmabufs imported, no CPU copy" : "frames copied into its buffers (counted)")
                    if !encoder.notes.isEmpty { why += "; " + encoder.notes.joined(separator: "; ") }
                    return (encoder, why)
                } catch {
                    declined.append("hardware: \(error)")
                }
            case .software:
                do {
                    let encoder = try LibavVideoEncoder(settings: settings, input: frame.format, copies: copies)
                    let why = "software encoder \(encoder.name) (libavcodec)"
                        + (declined.isEmpty ? "" : "; " + declined.joined(separator: "; "))
                        + (encoder.heldFramesBound.map { $0 == 0 ? "; it holds no frame back" : "; it holds at most \($0) frame\($0 == 1 ? "" : "s")" } ?? "")
                    return (encoder, why)
                } catch {
                    declined.append("software: \(error)")
                }
            }
        }
        throw V4L2EncoderError.call("no encoder for \(settings.codec) \(settings.size): " + declined.joined(separator: "; "))
    }
}
