import Testing
@testable import ObscuraMedia

@Suite struct PixelFormatTests {
    @Test func fourccRoundTrips() {
        #expect(PixelFormat.nv12.fourccString == "NV12")
        #expect(PixelFormat("NV12") == .nv12)
        #expect(PixelFormat.bgr888.fourcc == 0x3432_4742) // 'BG24', what libcamera reports for vimc
        #expect(FourCC.string(0x1) == "0x1")
    }

    @Test func nv12Layout() throws {
        let info = try #require(PixelFormat.nv12.info)
        #expect(info.planes.count == 2)
        #expect(info.bytesPerFrame(width: 1920, height: 1080) == 1920 * 1080 * 3 / 2)
        #expect(info.stride(plane: 1, width: 1920) == 1920)
        #expect(info.rows(plane: 1, height: 1080) == 540)
        #expect(info.ffmpegName == "nv12")
        #expect(info.avFoundationCode == "420v")
    }

    @Test func bgraCostsAbout2Point67TimesNV12() throws {
        let bgra = try #require(PixelFormat.argb8888.info)
        let nv12 = try #require(PixelFormat.nv12.info)
        let ratio = bgra.bitsPerPixel / nv12.bitsPerPixel
        #expect(abs(ratio - 2.667) < 0.01)
        #expect(bgra.bytesPerFrame(width: 1920, height: 1080) == 1920 * 1080 * 4)
    }

    @Test func tenBitFormats() throws {
        let p010 = try #require(PixelFormat.p010.info)
        #expect(p010.bitDepth == 10)
        #expect(p010.avFoundationCode == "x420")
        #expect(p010.bytesPerFrame(width: 64, height: 64) == 64 * 64 * 2 * 3 / 2)
        let p210 = try #require(PixelFormat.p210.info)
        #expect(p210.avFoundationCode == "x422")
        #expect(p210.bytesPerFrame(width: 64, height: 64) == 64 * 64 * 2 * 2)
    }

    @Test func vimcFormatsMapToFFmpegByteOrder() throws {
        // DRM BGR888 stores R, G, B in memory: FFmpeg calls that rgb24.
        #expect(PixelFormat.bgr888.info?.ffmpegName == "rgb24")
        #expect(PixelFormat.rgb888.info?.ffmpegName == "bgr24")
        #expect(PixelFormat.bgr888.info?.bytesPerFrame(width: 636, height: 480) == 636 * 480 * 3)
    }

    @Test func rangeNamesFollowAVFoundation() throws {
        let nv12 = try #require(PixelFormat.nv12.info)
        #expect(nv12.avFoundationCode(fullRange: false) == "420v")
        #expect(nv12.avFoundationCode(fullRange: true) == "420f")
        #expect(PixelFormat.p010.info?.avFoundationCode(fullRange: true) == "xf20")
        #expect(PixelFormat.p210.info?.avFoundationCode(fullRange: false) == "x422")
    }

    @Test func rawBayerDepthsAndCSI2Packing() throws {
        let unpacked = try #require(PixelFormat.sbggr10.info)
        #expect(unpacked.bitDepth == 10 && unpacked.bayerOrder == "BGGR" && unpacked.packing == .none)
        #expect(unpacked.bytesPerFrame(width: 640, height: 480) == 640 * 480 * 2)
        let packed = try #require(PixelFormat.sbggr10CSI2Packed.info)
        #expect(packed.packing == .csi2)
        #expect(packed.v4l2FourCC == "pBAA")
        #expect(packed.stride(plane: 0, width: 640) == 800)  // 4 pixels in 5 bytes
        let twelve = try #require(PixelFormat.srggb12CSI2Packed.info)
        #expect(twelve.v4l2FourCC == "pRCC")
        #expect(twelve.stride(plane: 0, width: 640) == 960) // 2 pixels in 3 bytes
        #expect(PixelFormat.sgrbg8.info?.bayerOrder == "GRBG")
    }

    @Test func conversionCostsAreStated() throws {
        let cost = try #require(PixelFormat.argb8888.info).memoryCost(to: try #require(PixelFormat.nv12.info), width: 1920, height: 1080)
        #expect(cost == "ARGB8888 → NV12: 3037 KiB per frame, 0.38× the source")
    }

    @Test func sizesParse() {
        #expect(PixelSize(parsing: "1280x720") == PixelSize(width: 1280, height: 720))
        #expect(PixelSize(parsing: "1280") == nil)
        #expect(PixelSize(parsing: "0x720") == nil)
    }

    @Test func copyCounterCounts() {
        let counter = CopyCounter()
        counter.recordFrame()
        counter.recordFrame()
        counter.recordCopy(bytes: 100)
        #expect(counter.copies == 1)
        #expect(counter.bytes == 100)
        #expect(counter.copiesPerFrame == 0.5)
    }
}
