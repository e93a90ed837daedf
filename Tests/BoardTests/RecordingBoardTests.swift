import Foundation
import Testing
import TestSupport

extension VirtualBoardTests {
/// Movie recording against real limits on the board.
@Suite struct RecordingBoardTests {
    let obscura = ".build/debug/obscura"

    @Test func aFullDiskStopsTheRecordingCleanlyAndTheFilePlays() throws {
        // A 1 MiB filesystem, and no free-space margin: the writes hit ENOSPC.
        let result = try VirtualBoard.run("""
            mkdir -p /mnt/small && mount -t tmpfs -o size=1m tmpfs /mnt/small
            \(obscura) record --camera synthetic --size 640x480 --duration 60 --min-free-space 0 --output /mnt/small/full.mp4
            echo "status=$?"
            ls /mnt/small
            ffprobe -v error -count_frames -show_entries stream=codec_name,nb_read_frames -of default=nw=1 /mnt/small/full.mp4
            """)
        #expect(result.status == 0, "\(result.stderr)")
        let out = result.stdout
        #expect(out.contains("finished: disk full"), "\(out)\(result.stderr)")
        #expect(out.contains("status=3"))
        #expect(out.contains("full.mp4\n"))           // given its final name
        #expect(!out.contains("full.mp4.partial"))
        #expect(out.contains("codec_name=h264"))
        let frames = out.split(separator: "\n").first { $0.hasPrefix("nb_read_frames=") }
            .flatMap { Int($0.dropFirst("nb_read_frames=".count)) } ?? 0
        #expect(frames > 30, "the file plays \(frames) frames")
    }
}
}
