import CSystem
#if canImport(Glibc)
import Glibc
#endif

/// Allocates dmabufs the way a camera's buffers are: from a DMA heap
/// (contiguous memory first, which hardware encoders such as a Raspberry Pi's
/// bcm2835-codec need to import a buffer), else from udmabuf (memfd pages
/// shared as a dmabuf, which a virtual board's drivers import).
public enum DmabufAllocator {
    /// Tried in this order: the CMA heaps a Raspberry Pi kernel has (Pi 5's
    /// name, then the mainline one), the system heap, then udmabuf.
    public static let heaps = ["/dev/dma_heap/vidbuf_cached", "/dev/dma_heap/linux,cma", "/dev/dma_heap/system"]
    public static let udmabuf = "/dev/udmabuf"
    /// Every allocator, in the order tried.
    public static var candidates: [String] { heaps + [udmabuf] }

    /// The first allocator this system has, or nil.
    public static var available: String? {
        candidates.first { access($0, R_OK | W_OK) == 0 }
    }

    /// A new dmabuf of `length` bytes from the first allocator there is;
    /// returns it and the allocator's path. `name` labels the udmabuf's memfd.
    public static func allocate(_ length: Int, name: String) throws(SystemError) -> (fd: OwnedFileDescriptor, from: String) {
        guard let path = available else {
            throw SystemError(call: "open", code: ENOENT,
                              detail: "a dmabuf allocator: none of \(candidates.joined(separator: ", ")) is here "
                                + "(kernel options CONFIG_DMABUF_HEAPS_CMA, CONFIG_DMABUF_HEAPS_SYSTEM or CONFIG_UDMABUF)")
        }
        let device = try Syscalls.open(path, O_RDWR)
        if path == udmabuf {
            // udmabuf takes whole pages.
            let page = Int(sysconf(Int32(_SC_PAGESIZE)))
            let size = (length + page - 1) / page * page
            let memory = try Syscalls.memfd(name, size: size)
            let fd = obscura_udmabuf_create(device.rawValue, memory.rawValue, UInt64(size))
            if fd < 0 { throw SystemError.errno("ioctl(UDMABUF_CREATE)", "\(size) bytes on \(path)") }
            return (OwnedFileDescriptor(adopting: fd), path)
        }
        let fd = obscura_dma_heap_alloc(device.rawValue, UInt64(length))
        if fd < 0 { throw SystemError.errno("ioctl(DMA_HEAP_IOCTL_ALLOC)", "\(length) bytes from \(path)") }
        return (OwnedFileDescriptor(adopting: fd), path)
    }
}
