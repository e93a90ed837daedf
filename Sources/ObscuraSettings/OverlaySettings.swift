#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ObscuraSystem

/// A burned-in caption: the date and time of each frame (from its sensor
/// timestamp, mapped to the wall clock), the camera's name and a text of
/// one's own, drawn into the frames before they are encoded.
public struct OverlaySettings: Sendable, Equatable {
    public enum Position: String, Sendable, CaseIterable {
        case topLeft = "top-left", topRight = "top-right", bottomLeft = "bottom-left", bottomRight = "bottom-right"
    }

    /// What keeps the text readable on any picture: an opaque box behind
    /// it, or a dark outline around each glyph (the picture shows between).
    public enum Background: String, Sendable, CaseIterable {
        case box, outline
    }

    /// A text of one's own (a second line, after the camera's name); empty: none.
    public var text = ""
    /// The camera's name, on the second line; nil: not shown.
    public var cameraName: String?
    public var position = Position.topLeft
    /// The text's height in pixels; 0: a 24th of the frame's height (at least 12).
    public var size = 0
    public var colour = RGB(red: 255, green: 255, blue: 255)
    public var background = Background.box
    /// A TrueType font (FreeType renders it). The default is in Debian's
    /// fonts-dejavu-core, which Raspberry Pi OS has too.
    public var font = Self.defaultFont
    /// The zone the time is shown in (with its offset, e.g. +01:00).
    public var timeZone = TimeZone.current

    public static let defaultFont = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono-Bold.ttf"
    /// Largest text height (pixels).
    public static let sizes = 8...256

    public init() {}

    /// The pixel height for a frame `height` pixels high.
    public func pixelHeight(forFrameHeight height: Int) -> Int {
        size > 0 ? size : max(12, height / 24)
    }
}

/// An sRGB colour.
public struct RGB: Sendable, Equatable, CustomStringConvertible {
    public var red: UInt8
    public var green: UInt8
    public var blue: UInt8

    public init(red: UInt8, green: UInt8, blue: UInt8) {
        self.red = red
        self.green = green
        self.blue = blue
    }

    /// `#rrggbb`, or one of `named`.
    public init?(parsing text: String) {
        let t = text.lowercased()
        if let named = Self.named[t] {
            self = named
            return
        }
        guard t.hasPrefix("#"), t.count == 7, let value = UInt32(t.dropFirst(), radix: 16) else { return nil }
        self.init(red: UInt8(value >> 16 & 0xff), green: UInt8(value >> 8 & 0xff), blue: UInt8(value & 0xff))
    }

    public static let named: [String: RGB] = [
        "white": RGB(red: 255, green: 255, blue: 255), "black": RGB(red: 0, green: 0, blue: 0),
        "yellow": RGB(red: 255, green: 255, blue: 0), "red": RGB(red: 255, green: 0, blue: 0),
        "green": RGB(red: 0, green: 255, blue: 0), "blue": RGB(red: 0, green: 0, blue: 255),
    ]

    public var description: String { String(printf: "#%02x%02x%02x", red, green, blue) }
}
