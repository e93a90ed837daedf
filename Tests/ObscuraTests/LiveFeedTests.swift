import Foundation
import TestSupport
import Testing
import ObscuraSystem
@testable import ObscuraCapture
@testable import ObscuraMedia
@testable import ObscuraRecording
@testable import ObscuraSoftwareCamera

/// The live viewers' share of a recording: its own packets, a key frame at
/// once for a viewer that joins, decodable from the first packet, each
/// carrying its frame's camera time.
@Suite(.serialized) struct LiveFeedTests {
    /// A viewer's packets, taken on a thread of their own (`next` blocks)
    /// until `count` have come or `within` has passed.
    private func collect(_ viewer: LiveViewer, count: Int, within: Duration = .seconds(60)) throws -> [LivePacket] {
        let got = Mutex<[LivePacket]>([])
        let deadline = ContinuousClock.now + within
        let thread = try JoinableThread(name: "live-viewer-test") {
            while ContinuousClock.now < deadline, got.withLock({ $0.count }) < count {
                guard let packets = try? viewer.next(timeout: .milliseconds(200)) else { return }
                got.withLock { $0 += packets }
            }
        }
        thread.join()
        return got.withLock { $0 }
    }

    /// A recording of the time-stamped pattern with key frames 20 s apart,
    /// so that a key frame soon after a viewer joins is one it asked for.
    private func recording(_ name: String) throws -> (MovieFileOutput, CaptureSession, AsyncStream<RecordingEvent>, TemporaryDirectory) {
        let dir = try TemporaryDirectory("obscura-live")
        let output = MovieFileOutput()
        let session = try patternSession([output], camera: SyntheticCamera(stampsTime: true))
        var settings = MovieSettings()
        settings.maxKeyFrameInterval = 600
        let events = try output.startRecording(to: dir.path + "/" + name, settings: settings)
        try session.startRunning()
        return (output, session, events, dir)
    }

    private func finish(_ output: MovieFileOutput, _ session: CaptureSession, _ events: AsyncStream<RecordingEvent>) async {
        output.stopRecording()
        for await event in events { if case .finished = event { break } }
        try? session.stopRunning()
    }

    @Test func aJoiningViewerGetsAKeyFrameAtOnceAndEveryFrameAfterWithItsCameraTime() async throws {
        let (output, session, events, dir) = try recording("viewed.mp4")
        #expect(await session.delivers(20))
        let deliveredAtJoin = session.deliveredFrameCount
        let joined = try output.live.join()
        let viewer = try #require(joined)
        let packets = try collect(viewer, count: 30)
        viewer.leave()
        await finish(output, session, events)
        try #require(packets.count >= 30, "\(packets.count) packets")
        // Its first packet is a key frame with the parameter sets in front,
        // asked for at once: the recording's own next key frame was 20 s away.
        #expect(packets[0].isKeyframe && AnnexB.beginsWithParameterSet(packets[0].data))
        let file = try runProgram("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "packet=flags",
                                              "-of", "csv=p=0", dir.path + "/viewed.mp4"])
        let keys = file.stdout.split(separator: "\n").enumerated().filter { $0.element.hasPrefix("K") }.map(\.offset)
        // The recording's first key frame, and the viewer's within the few
        // frames that were queued or inside the encoder when it joined.
        #expect(keys.count == 2 && keys[1] <= deliveredAtJoin + 8, "key frames at \(keys); joined after \(deliveredAtJoin) frames")
        // What the viewer got decodes from its first packet, and each frame's
        // picture carries the camera time its packet was sent with.
        let stream = dir.path + "/live.h264"
        try Data(packets.flatMap { $0.data }).write(to: URL(fileURLWithPath: stream))
        let decoded = try runProgram("ffmpeg", ["-v", "error", "-f", "h264", "-i", stream, "-f", "rawvideo", "-pix_fmt", "gray",
                                                dir.path + "/live.gray"])
        try #require(decoded.status == 0, "\(decoded.stderr)")
        let luma = try [UInt8](Data(contentsOf: URL(fileURLWithPath: dir.path + "/live.gray")))
        let frameBytes = 640 * 480
        try #require(luma.count == frameBytes * packets.count, "\(luma.count / frameBytes) frames decoded of \(packets.count)")
        for (n, packet) in packets.enumerated() {
            let read = luma[(n * frameBytes)...].withUnsafeBufferPointer { b in
                FrameTimeCode.read(from: UnsafeRawPointer(b.baseAddress!), stride: 640, width: 640, height: 480)
            }
            // (The file's times are whole microseconds from its first frame:
            // a packet's camera time, made back from them, may be 1 µs off.)
            let sent = Int64((packet.timestamp / 1000) & 0xFFFF_FFFF_FFFF)
            #expect(read.map { abs(Int64($0) - sent) <= 1 } == true, "packet \(n): \(String(describing: read)) against \(sent)")
        }
        let counts = output.live.counts
        #expect(counts.viewers == 0 && counts.joined == 1 && counts.packets >= packets.count)
        #expect(counts.bytes >= packets.reduce(0) { $0 + $1.data.count })
    }

    /// A viewer that takes nothing for longer than its bound skips to a key
    /// frame; the recording goes on meanwhile, every frame in its file.
    @Test func aStalledViewerSkipsToAKeyFrameAndTheRecordingKeepsEveryFrame() async throws {
        let (output, session, events, dir) = try recording("stalled.mp4")
        let joined = try output.live.join()
        let viewer = try #require(joined)
        #expect(await session.delivers(10))
        // Stalled for its whole bound and more, counted in camera frames.
        let interval = 1.0 / 30
        #expect(await session.delivers(Int((output.live.bound.seconds + 0.5) / interval)))
        let packets = try collect(viewer, count: 5)
        let counts = output.live.counts
        viewer.leave()
        await finish(output, session, events)
        #expect(counts.skips >= 1, "\(counts)")
        #expect(packets.first?.isKeyframe == true)
        let frames = try runProgram("ffprobe", ["-v", "error", "-select_streams", "v:0", "-count_packets", "-show_entries",
                                                "stream=nb_read_packets", "-of", "csv=p=0", dir.path + "/stalled.mp4"])
        #expect((Int(frames.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) >= 40, "\(frames.stdout)")
    }

    @Test func aViewerPastTheLimitIsRefusedAndCounted() throws {
        let feed = LiveFeed(limit: 1)
        let first = try feed.join()
        #expect(first != nil)
        #expect(try feed.join() == nil)
        first?.leave()
        #expect(try feed.join() != nil)
        #expect(feed.counts.refused == 1 && feed.counts.joined == 2)
    }

    @Test func parameterSetsComeAsAnnexBFromEitherForm() {
        let sps: [UInt8] = [0x67, 0x42, 0xC0, 0x1E], pps: [UInt8] = [0x68, 0xCE, 0x3C, 0x80]
        let annexB = [0, 0, 0, 1] + sps + [0, 0, 0, 1] + pps
        #expect(AnnexB.parameterSets(fromExtradata: annexB) == annexB)
        let avcC: [UInt8] = [1, 0x42, 0xC0, 0x1E, 0xFF, 0xE1, 0, 4] + sps + [1, 0, 4] + pps
        #expect(AnnexB.parameterSets(fromExtradata: avcC) == annexB)
        #expect(AnnexB.parameterSets(fromExtradata: [1, 2, 3]) == [])
        #expect(AnnexB.beginsWithParameterSet(annexB))
        #expect(!AnnexB.beginsWithParameterSet([0, 0, 1, 0x65, 0x88]))
    }
}
