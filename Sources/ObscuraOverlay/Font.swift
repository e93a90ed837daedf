import CFreeType
import Foundation

/// What the overlay could not do, said for a person.
public struct OverlayError: Error, CustomStringConvertible, Sendable, Equatable {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// A glyph as FreeType rendered it: an 8-bit coverage bitmap and where it
/// sits on the pen's baseline.
struct Glyph {
    var width: Int
    var rows: Int
    var left: Int
    var top: Int
    var advance: Int
    var coverage: [UInt8]
}

/// A TrueType font at one pixel size, through FreeType (anti-aliased,
/// hinted). Each glyph is rendered once and kept.
///
/// Not Sendable: one recording's renderer owns it.
final class OverlayFont {
    private var library: FT_Library?
    private var face: FT_Face?
    private var glyphs: [UInt32: Glyph] = [:]
    let pixelHeight: Int
    /// From the baseline up to the top of the tallest glyph, and down to the
    /// lowest descender (pixels).
    let ascender: Int
    let descender: Int

    init(path: String, pixelHeight: Int) throws(OverlayError) {
        self.pixelHeight = pixelHeight
        var lib: FT_Library?
        guard FT_Init_FreeType(&lib) == 0, let lib else { throw OverlayError("FT_Init_FreeType failed") }
        library = lib
        var f: FT_Face?
        let opened = FT_New_Face(lib, path, 0, &f)
        guard opened == 0, let f else {
            FT_Done_FreeType(lib)
            library = nil
            throw OverlayError("FT_New_Face failed for \(path) (FreeType error \(opened)): a TrueType font file is needed (fonts-dejavu-core has /usr/share/fonts/truetype/dejavu/DejaVuSansMono-Bold.ttf)")
        }
        face = f
        guard FT_Set_Pixel_Sizes(f, 0, FT_UInt(pixelHeight)) == 0 else {
            FT_Done_Face(f)
            FT_Done_FreeType(lib)
            face = nil
            library = nil
            throw OverlayError("FT_Set_Pixel_Sizes(\(pixelHeight)) failed for \(path)")
        }
        let metrics = f.pointee.size.pointee.metrics
        ascender = Int(metrics.ascender + 63) >> 6
        descender = Int(-metrics.descender + 63) >> 6
    }

    deinit {
        if let face { FT_Done_Face(face) }
        if let library { FT_Done_FreeType(library) }
    }

    /// The glyph for `scalar` (the font's missing-glyph box when it has none).
    func glyph(_ scalar: Unicode.Scalar) -> Glyph {
        if let known = glyphs[scalar.value] { return known }
        var made = Glyph(width: 0, rows: 0, left: 0, top: 0, advance: pixelHeight / 2, coverage: [])
        if let face, FT_Load_Char(face, FT_ULong(scalar.value), FT_Int32(FT_LOAD_RENDER)) == 0, let slot = face.pointee.glyph {
            let bitmap = slot.pointee.bitmap
            made.width = Int(bitmap.width)
            made.rows = Int(bitmap.rows)
            made.left = Int(slot.pointee.bitmap_left)
            made.top = Int(slot.pointee.bitmap_top)
            made.advance = Int(slot.pointee.advance.x + 32) >> 6
            made.coverage = [UInt8](repeating: 0, count: made.width * made.rows)
            if let buffer = bitmap.buffer {
                let pitch = Int(bitmap.pitch)
                for row in 0..<made.rows {
                    for column in 0..<made.width {
                        made.coverage[row * made.width + column] = buffer[row * pitch + column]
                    }
                }
            }
        }
        glyphs[scalar.value] = made
        return made
    }
}
