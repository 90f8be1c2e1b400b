import XCTest
import Foundation
@testable import TorchVision
@testable import Torch

private let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Fixtures")
private let imagesDir = fixtures.appendingPathComponent("images").path

private func imageCases() throws -> [[String: Any]] {
    let data = try Data(contentsOf: fixtures.appendingPathComponent("image_io.json"))
    return (try JSONSerialization.jsonObject(with: data) as! [String: Any])["cases"] as! [[String: Any]]
}

/// scikit-image's sample photos, from the fixture venv (/root/torchenv) or $SKIMAGE_DATA; nil when absent.
private func skimageData() -> String? {
    if let dir = ProcessInfo.processInfo.environment["SKIMAGE_DATA"] { return dir }
    let lib = "/root/torchenv/lib"
    guard let versions = try? FileManager.default.contentsOfDirectory(atPath: lib) else { return nil }
    for v in versions.sorted() where v.hasPrefix("python") {
        let dir = "\(lib)/\(v)/site-packages/skimage/data"
        if FileManager.default.fileExists(atPath: "\(dir)/coffee.png") { return dir }
    }
    return nil
}

/// Checksums computed as scripts/fixtures/image_io.py computes them.
private struct Summary: Equatable, CustomStringConvertible {
    var shape: [Int]
    var dtype: String
    var sum: Int64
    var sumsq: Int64
    var wsum: Int64
    var pixels: [[Int64]]

    init(_ t: Tensor) {
        shape = t.shape
        dtype = t.dtype.name
        let v = t.contiguous().toArray(as: Int64.self)
        (sum, sumsq, wsum) = (0, 0, 0)
        for (i, x) in v.enumerated() {
            sum += x
            sumsq += x * x
            wsum += x * Int64(i % 1000 + 1)
        }
        let (h, w) = (t.shape[1], t.shape[2])
        pixels = [(0.0, 0.0), (0.5, 0.5), (0.99, 0.99), (0.25, 0.75)].map { fy, fx in
            let y = min(h - 1, Int(fy * Double(h))), x = min(w - 1, Int(fx * Double(w)))
            return t[0..., y, x].toArray(as: Int64.self)
        }
    }

    init(_ c: [String: Any]) {
        shape = c["shape"] as! [Int]
        dtype = c["dtype"] as! String
        sum = (c["sum"] as! NSNumber).int64Value
        sumsq = (c["sumsq"] as! NSNumber).int64Value
        wsum = (c["wsum"] as! NSNumber).int64Value
        pixels = (c["pixels"] as! [[String: Any]]).map { ($0["values"] as! [NSNumber]).map { $0.int64Value } }
    }

    var count: Int { shape.reduce(1, *) }
    var description: String { "shape \(shape) \(dtype) sum \(sum) sumsq \(sumsq) wsum \(wsum) pixels \(pixels)" }
}

/// JPEG tolerance: libjpeg versions may round the IDCT and upsampling differently, so a decoded JPEG
/// must have the same shape, a mean within 0.5 grey levels and a root-mean-square within 1 of
/// torchvision's, and the sampled pixels within 3 levels.
private func assertJPEGClose(_ a: Summary, _ b: Summary, _ what: String, file: StaticString = #filePath, line: UInt = #line) {
    XCTAssertEqual(a.shape, b.shape, what, file: file, line: line)
    XCTAssertEqual(a.dtype, b.dtype, what, file: file, line: line)
    let n = Double(max(1, a.count))
    XCTAssertEqual(Double(a.sum) / n, Double(b.sum) / n, accuracy: 0.5, "mean, \(what)", file: file, line: line)
    XCTAssertEqual((Double(a.sumsq) / n).squareRoot(), (Double(b.sumsq) / n).squareRoot(), accuracy: 1, "rms, \(what)", file: file, line: line)
    for (p, q) in zip(a.pixels, b.pixels) {
        XCTAssertEqual(p.count, q.count, what, file: file, line: line)
        for (u, v) in zip(p, q) { XCTAssertLessThanOrEqual(abs(u - v), 3, "pixel \(p) vs \(q), \(what)", file: file, line: line) }
    }
}

private func mode(_ name: String) -> io.ImageReadMode {
    ["unchanged": .unchanged, "gray": .gray, "grayAlpha": .grayAlpha, "RGB": .RGB, "RGBA": .RGBA][name]!
}

private func temporaryDirectory() throws -> String {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("image-io-tests-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    return dir.path
}

/// The error `body` throws, as text; fails when it throws none or not an ImageError.
private func imageError(_ body: () throws -> Any, file: StaticString = #filePath, line: UInt = #line) -> String {
    do {
        _ = try body()
        XCTFail("expected an ImageError", file: file, line: line)
        return ""
    } catch let e as ImageError {
        return e.description
    } catch {
        XCTFail("expected an ImageError, got \(error)", file: file, line: line)
        return ""
    }
}

final class ImageIOTests: XCTestCase {
    // MARK: - Decoding: every PNG type and JPEG kind against torchvision 0.29

    func testSyntheticPNGsMatchTorchvisionExactly() throws {
        var checked = 0
        for c in try imageCases() where c["kind"] as? String == "file" && c["format"] as? String == "PNG" {
            let name = c["file"] as! String, m = c["mode"] as! String
            let t = try io.readImage("\(imagesDir)/\(name)", mode: mode(m))
            XCTAssertEqual(Summary(t), Summary(c), "\(name) \(m)")
            checked += 1
        }
        XCTAssertEqual(checked, 26 * 5)
    }

    func testSyntheticJPEGsMatchTorchvisionWithinTolerance() throws {
        var checked = 0
        for c in try imageCases() where c["kind"] as? String == "file" && c["format"] as? String == "JPEG" {
            let name = c["file"] as! String, m = c["mode"] as! String
            let bytes = try io.readFile("\(imagesDir)/\(name)")
            assertJPEGClose(Summary(try io.decodeJPEG(bytes, mode: mode(m))), Summary(c), "\(name) \(m)")
            checked += 1
        }
        XCTAssertEqual(checked, 6 * 3)
    }

    func testSixteenBitPNGGivesInt32Values() throws {
        let t = try io.readImage("\(imagesDir)/rgb16.png")
        XCTAssertEqual(t.dtype, .int32)
        XCTAssertEqual(t.shape, [3, 11, 13])
        XCTAssertGreaterThan(t.max().item(), 255)
        XCTAssertLessThanOrEqual(t.max().item(), 65535)
    }

    func testDecodeImageFromBytesTensorAndPerFormat() throws {
        for name in ["rgba8.png", "palette4_trns.png", "progressive.jpg"] {
            let path = "\(imagesDir)/\(name)"
            let expected = try io.readImage(path, mode: .RGB)
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
            XCTAssertEqual(try io.decodeImage(bytes, mode: .RGB).toArray(as: UInt8.self), expected.toArray(as: UInt8.self))
            let t = try io.readFile(path)
            XCTAssertEqual(t.dtype, .uint8)
            XCTAssertEqual(t.shape, [bytes.count])
            let direct = name.hasSuffix(".png") ? try io.decodePNG(t, mode: .RGB) : try io.decodeJPEG(t, mode: .RGB)
            XCTAssertEqual(direct.toArray(as: UInt8.self), expected.toArray(as: UInt8.self))
        }
        // Like torchvision's, the result is a channels-first view of the decoded H×W×C pixels.
        let rgba = try io.readImage("\(imagesDir)/rgba8.png")
        XCTAssertEqual(rgba.shape, [4, 11, 13])
        XCTAssertEqual(rgba.strides, [1, 13 * 4, 4])
        // The explicit decoders don't accept the other format.
        let jpeg = try io.readFile("\(imagesDir)/gray.jpg")
        XCTAssertTrue(imageError { try io.decodePNG(jpeg) }.contains("not a PNG file"))
    }

    // MARK: - Image (PIL's view)

    func testImageOpenMatchesPillow() throws {
        var checked = 0
        for c in try imageCases() where c["kind"] as? String == "pil" && c["photo"] == nil {
            let name = c["file"] as! String
            let img = try Image.open("\(imagesDir)/\(name)")
            XCTAssertEqual(img.mode.rawValue, c["mode"] as! String, name)
            let s = Summary(img.tensor())
            if name.hasSuffix(".jpg") { assertJPEGClose(s, Summary(c), name) } else { XCTAssertEqual(s, Summary(c), name) }
            checked += 1
        }
        XCTAssertGreaterThan(checked, 20)
    }

    func testImageValueBasics() throws {
        let pixels: [UInt8] = [10, 20, 30, 40, 50, 60, 255, 0, 0, 0, 0, 255]
        let img = Image(width: 2, height: 2, mode: .RGB, pixels: pixels)
        XCTAssertEqual(img.size.width, 2)
        XCTAssertEqual(img.size.height, 2)
        XCTAssertEqual(img.mode.bands, 3)
        XCTAssertEqual(img.description, "<Image mode=RGB size=2x2>")
        XCTAssertEqual(img.getpixel(0, 1), [255, 0, 0])
        let t = img.tensor()
        XCTAssertEqual(t.shape, [3, 2, 2])
        XCTAssertEqual(t.toArray(as: UInt8.self), [10, 40, 255, 0, 20, 50, 0, 0, 30, 60, 0, 255])
        XCTAssertEqual(Image(tensor: t), img)
        // PIL: L = (R*19595 + G*38470 + B*7471 + 0x8000) >> 16
        XCTAssertEqual(img.convert(.L).pixels, [18, 48, 76, 29])   // Pillow 13's values
        XCTAssertEqual(img.convert(.RGBA).pixels, [10, 20, 30, 255, 40, 50, 60, 255, 255, 0, 0, 255, 0, 0, 255, 255])
        XCTAssertEqual(img.convert(.RGBA).convert(.RGB), img)
        XCTAssertEqual(img.convert(.L).convert(.RGB).pixels, [18, 18, 18, 48, 48, 48, 76, 76, 76, 29, 29, 29])
        let grey = Image(tensor: Tensor([UInt8]([1, 2, 3, 4, 5, 6]), shape: [2, 3]))
        XCTAssertEqual(grey.mode, .L)
        XCTAssertEqual(grey.size.width, 3)
        XCTAssertEqual(Image(mode: .RGBA, size: (width: 3, height: 1), color: [1, 2, 3, 4]).pixels, [1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4])
    }

    // MARK: - scikit-image photos (skipped without the fixture venv)

    func testPhotosMatchTorchvisionAndPillow() throws {
        guard let dir = skimageData() else {
            throw XCTSkip("scikit-image's sample photos not found (/root/torchenv/lib/python*/site-packages/skimage/data or $SKIMAGE_DATA)")
        }
        var checked = 0
        for c in try imageCases() {
            let kind = c["kind"] as! String
            guard kind == "photo" || (kind == "pil" && c["photo"] != nil) || kind == "pil_convert" else { continue }
            let name = c["file"] as! String
            let path = "\(dir)/\(name)"
            let s: Summary
            if kind == "photo" {
                s = Summary(try io.readImage(path, mode: mode(c["mode"] as! String)))
            } else if kind == "pil" {
                let img = try Image.open(path)
                XCTAssertEqual(img.mode.rawValue, c["mode"] as! String, name)
                s = Summary(img.tensor())
            } else {
                s = Summary(try Image.open(path).convert(.L).tensor())
            }
            let what = "\(kind) \(name) \(c["mode"] ?? "")"
            if name.hasSuffix(".jpg") { assertJPEGClose(s, Summary(c), what) } else { XCTAssertEqual(s, Summary(c), what) }
            checked += 1
        }
        XCTAssertEqual(checked, 6 * 4 + 2 * 3 + 7 + 1)
    }

    // MARK: - Encoding and writing

    func testEncodePNGRoundTripsExactly() throws {
        for name in ["gray8.png", "grayalpha8.png", "rgb8.png", "rgba8_interlaced.png", "palette2.png"] {
            let img = try io.readImage("\(imagesDir)/\(name)")
            for level in [0, 6, 9] {
                let png = try io.encodePNG(img, compressionLevel: level)
                XCTAssertEqual(png.dtype, .uint8)
                XCTAssertEqual(png.dim, 1)
                XCTAssertEqual(try io.decodeImage(png).toArray(as: UInt8.self), img.toArray(as: UInt8.self), "\(name) level \(level)")
            }
        }
        // A smooth picture compresses, more at level 9 than at 0 (stored).
        let smooth = Tensor((0..<(64 * 48)).map { UInt8($0 % 256) }, shape: [1, 48, 64]).expand(3, 48, 64)
        let stored = try io.encodePNG(smooth, compressionLevel: 0), small = try io.encodePNG(smooth, compressionLevel: 9)
        XCTAssertGreaterThan(stored.numel, 3 * 48 * 64)
        XCTAssertLessThan(small.numel, stored.numel / 4)
        XCTAssertEqual(try io.decodeImage(small).toArray(as: UInt8.self), smooth.contiguous().toArray(as: UInt8.self))
        // A non-contiguous input (a flipped view) encodes its logical values.
        let img = try io.readImage("\(imagesDir)/rgb8.png")
        let flipped = img.flip(2)
        XCTAssertEqual(try io.decodeImage(io.encodePNG(flipped)).toArray(as: UInt8.self), flipped.contiguous().toArray(as: UInt8.self))
    }

    func testEncodeJPEGMatchesTorchvision() throws {
        let img = try io.readImage("\(imagesDir)/rgb8_interlaced.png")
        for c in try imageCases() where c["kind"] as? String == "encode_jpeg" {
            let q = c["quality"] as! Int
            let jpeg = try io.encodeJPEG(img, quality: q)
            XCTAssertEqual(Double(jpeg.numel), Double(c["bytes"] as! Int), accuracy: Double(c["bytes"] as! Int) * 0.05, "size at quality \(q)")
            assertJPEGClose(Summary(try io.decodeJPEG(jpeg)), Summary(c), "quality \(q)")
        }
        let grey = try io.encodeJPEG(io.readImage("\(imagesDir)/gray8.png"))
        XCTAssertEqual(try io.decodeImage(grey).shape, [1, 11, 13])
    }

    func testWriteAndReadFiles() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let img = try io.readImage("\(imagesDir)/rgb8.png")
        try io.writePNG(img, "\(dir)/a.png", compressionLevel: 1)
        XCTAssertEqual(try io.readImage("\(dir)/a.png").toArray(as: UInt8.self), img.toArray(as: UInt8.self))
        let smooth = Tensor((0..<(40 * 30)).map { UInt8($0 / 5) }, shape: [1, 30, 40]).expand(3, 30, 40)
        try io.writeJPEG(smooth, "\(dir)/a.jpg", quality: 100)
        let back = try io.readImage("\(dir)/a.jpg")
        XCTAssertEqual(back.shape, smooth.shape)
        XCTAssertLessThan((back.to(.float32) - smooth.to(.float32)).abs().mean().item(), 1)
        let bytes = try io.readFile("\(imagesDir)/gray4.png")
        try io.writeFile("\(dir)/copy.png", bytes)
        XCTAssertEqual(try io.readFile("\(dir)/copy.png").toArray(as: UInt8.self), bytes.toArray(as: UInt8.self))

        let pil = try Image.open("\(imagesDir)/rgba8.png")
        try pil.save("\(dir)/b.png")
        XCTAssertEqual(try Image.open("\(dir)/b.png"), pil)
        try pil.convert(.L).save("\(dir)/b.JPEG", quality: 90)
        XCTAssertEqual(try Image.open("\(dir)/b.JPEG").mode, .L)
        XCTAssertTrue(imageError { try pil.save("\(dir)/c.jpg") }.contains("cannot write mode RGBA as JPEG"))
        XCTAssertTrue(imageError { try pil.save("\(dir)/c.tiff") }.contains("unknown file extension"))
        let unwritable = imageError { try io.writeFile("\(dir)/missing/x.png", bytes) }
        XCTAssertTrue(unwritable.contains("\(dir)/missing/") && unwritable.contains("No such file"), unwritable)
    }

    // MARK: - Errors: damaged, hostile and missing files

    func testErrorsNameTheFileAndTheLibraryMessage() throws {
        let missing = "\(imagesDir)/no-such-image.png"
        let e0 = imageError { try io.readImage(missing) }
        XCTAssertTrue(e0.contains(missing) && e0.contains("No such file"), e0)

        let truncated = imageError { try io.readImage("\(imagesDir)/bad_truncated.png") }
        XCTAssertTrue(truncated.contains("bad_truncated.png") && truncated.contains("libpng") && truncated.contains("truncated"), truncated)
        let crc = imageError { try io.readImage("\(imagesDir)/bad_crc.png") }
        XCTAssertTrue(crc.contains("bad_crc.png") && crc.contains("IDAT: CRC error"), crc)
        let zlib = imageError { try io.readImage("\(imagesDir)/bad_zlib.png") }
        XCTAssertTrue(zlib.contains("bad_zlib.png") && zlib.contains("libpng: IDAT"), zlib)
        let huge = imageError { try io.readImage("\(imagesDir)/bad_huge.png") }
        XCTAssertTrue(huge.contains("100000 x 100000") && huge.contains("limit"), huge)
        let jpegTruncated = imageError { try io.readImage("\(imagesDir)/bad_truncated.jpg") }
        XCTAssertTrue(jpegTruncated.contains("bad_truncated.jpg") && jpegTruncated.contains("truncated"), jpegTruncated)
        let header = imageError { try io.readImage("\(imagesDir)/bad_header.jpg") }
        XCTAssertTrue(header.contains("bad_header.jpg") && header.contains("libjpeg"), header)
        let random = imageError { try io.readImage("\(imagesDir)/bad_random.bin") }
        XCTAssertTrue(random.contains("bad_random.bin") && random.contains("only PNG and JPEG"), random)
        XCTAssertTrue(imageError { try io.decodeImage([UInt8]()) }.contains("empty"))
        XCTAssertTrue(imageError { try io.decodeImage(Array("GIF89a....".utf8)) }.contains("GIF"))
        let alpha = imageError { try io.readImage("\(imagesDir)/gray.jpg", mode: .grayAlpha) }
        XCTAssertTrue(alpha.contains("GRAY_ALPHA") && alpha.contains("JPEG"), alpha)
        XCTAssertTrue(imageError { try Image.open("\(imagesDir)/bad_truncated.png") }.contains("truncated"))

        // Every prefix of a PNG and of a JPEG fails cleanly (or, for the JPEG's last bytes, decodes).
        for name in ["rgb8_interlaced.png", "progressive.jpg"] {
            let full = [UInt8](try Data(contentsOf: URL(fileURLWithPath: "\(imagesDir)/\(name)")))
            // (A PNG cut inside its last chunk, IEND, still decodes: like torchvision, nothing after the image data is read.)
            for cut in stride(from: 0, to: full.count - (name.hasSuffix(".png") ? 12 : 2), by: 7) {
                XCTAssertThrowsError(try io.decodeImage(Array(full[..<cut])), "\(name) cut at \(cut)")
            }
        }
    }

    func testFailedDecodesDoNotLeak() throws {
        func residentBytes() -> Int {
            let text = (try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8)) ?? "0 0"
            return (Int(text.split(separator: " ")[1]) ?? 0) * 4096
        }
        let bad = try ["bad_truncated.png", "bad_crc.png", "bad_zlib.png", "bad_huge.png", "bad_truncated.jpg", "bad_header.jpg"].map {
            try io.readFile("\(imagesDir)/\($0)")
        }
        for b in bad { _ = try? io.decodeImage(b) }
        let before = residentBytes()
        for _ in 0..<3000 { for b in bad { _ = try? io.decodeImage(b) } }
        let grown = residentBytes() - before
        XCTAssertLessThan(grown, 8 << 20, "resident memory grew by \(grown) bytes over 18000 failed decodes")
    }

    func testLibraryVersionsAreReported() {
        XCTAssertTrue(io.imageLibraries.contains("libpng 1."), io.imageLibraries)
        XCTAssertTrue(io.imageLibraries.contains("libjpeg"), io.imageLibraries)
    }
}
