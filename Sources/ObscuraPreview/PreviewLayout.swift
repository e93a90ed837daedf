import ObscuraMedia

/// A rectangle in pixels.
public struct PreviewRect: Sendable, Equatable, CustomStringConvertible {
    public var x: Int
    public var y: Int
    public var width: Int
    public var height: Int
    public init(x: Int, y: Int, width: Int, height: Int) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }
    public var size: PixelSize { PixelSize(width: width, height: height) }
    public var description: String { "\(width)x\(height)+\(x)+\(y)" }

    /// Parses "WxH+X+Y".
    public init?(parsing text: String) {
        let parts = text.split(separator: "+")
        guard parts.count == 3, let size = PixelSize(parsing: String(parts[0])),
              let x = Int(parts[1]), let y = Int(parts[2]), x >= 0, y >= 0 else { return nil }
        self.init(x: x, y: y, width: size.width, height: size.height)
    }
}

/// How the frame fills the preview area, like the preview layer's video gravity.
public enum PreviewGravity: String, Sendable, CaseIterable {
    /// The whole frame, aspect kept, letterboxed (resizeAspect).
    case fit
    /// The area filled, aspect kept, the frame cropped (resizeAspectFill).
    case fill
    /// The whole frame stretched over the area (resize).
    case stretch
}

public enum PreviewLayout {
    /// The source crop and the destination rectangle for a frame of `source`
    /// size rotated clockwise by `rotation` into `area`.
    public static func place(source: PixelSize, rotation: Int, in area: PreviewRect,
                             gravity: PreviewGravity) -> (source: PreviewRect, destination: PreviewRect) {
        let turned = rotation % 180 != 0
        // The frame as it appears on screen.
        let shownW = Double(turned ? source.height : source.width)
        let shownH = Double(turned ? source.width : source.height)
        let full = PreviewRect(x: 0, y: 0, width: source.width, height: source.height)
        switch gravity {
        case .stretch:
            return (full, area)
        case .fit:
            let scale = min(Double(area.width) / shownW, Double(area.height) / shownH)
            let w = min(area.width, Int((shownW * scale).rounded()) & ~1)
            let h = min(area.height, Int((shownH * scale).rounded()) & ~1)
            return (full, PreviewRect(x: area.x + (area.width - w) / 2, y: area.y + (area.height - h) / 2, width: w, height: h))
        case .fill:
            let scale = max(Double(area.width) / shownW, Double(area.height) / shownH)
            // The visible part, in on-screen orientation, then back in the frame's.
            var visibleW = min(Int((Double(area.width) / scale).rounded()), Int(shownW)) & ~1
            var visibleH = min(Int((Double(area.height) / scale).rounded()), Int(shownH)) & ~1
            if turned { swap(&visibleW, &visibleH) }
            let crop = PreviewRect(x: ((source.width - visibleW) / 2) & ~1, y: ((source.height - visibleH) / 2) & ~1,
                                   width: visibleW, height: visibleH)
            return (crop, area)
        }
    }
}
