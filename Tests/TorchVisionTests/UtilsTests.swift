import Foundation
import XCTest
@testable import TorchVision
@testable import Torch

/// `utils.makeGrid` against torchvision 0.29's `make_grid`.
final class UtilsTests: XCTestCase {
    func testMakeGridMatchesTorchvision() {
        let cases = TransformsFixture.of("grid")
        XCTAssertEqual(cases.count, 8)
        for c in cases {
            let source = TransformsFixture.of("grid_input").first { $0["name"] as? String == c["input"] as? String }!
            let x = TransformsFixture.tensor(source["input"]!)
            let a = c["args"] as! [String: Any]
            let range = (a["value_range"] as? [NSNumber]).map { ($0[0].doubleValue, $0[1].doubleValue) }
            let grid = utils.makeGrid(x, nrow: a["nrow"] as? Int ?? 8, padding: a["padding"] as? Int ?? 2,
                                      normalize: a["normalize"] as? Bool ?? false, valueRange: range,
                                      scaleEach: a["scale_each"] as? Bool ?? false,
                                      padValue: (a["pad_value"] as? NSNumber)?.doubleValue ?? 0)
            assertImagesClose(grid, TransformsFixture.tensor(c["output"]!), atol: 1e-5, "make_grid \(a) on \(x.shape)")
        }
    }

    func testSaveImageWritesTorchvisionsBytes() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("save-image-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let cases = TransformsFixture.of("save")
        XCTAssertEqual(cases.count, 2)
        for (k, c) in cases.enumerated() {
            let source = TransformsFixture.of("grid_input").first { $0["name"] as? String == c["input"] as? String }!
            let x = TransformsFixture.tensor(source["input"]!)
            let a = c["args"] as! [String: Any]
            let expected = TransformsFixture.tensor(c["output"]!)
            let pixels = utils.imagePixels(x, nrow: a["nrow"] as? Int ?? 8, padding: a["padding"] as? Int ?? 2,
                                           normalize: a["normalize"] as? Bool ?? false)
            assertImagesClose(pixels, expected, atol: 0, "save_image bytes \(a)")
            let path = dir.appendingPathComponent("grid\(k).png").path
            try utils.saveImage(x, path, nrow: a["nrow"] as? Int ?? 8, padding: a["padding"] as? Int ?? 2,
                                normalize: a["normalize"] as? Bool ?? false)
            assertImagesClose(try io.readImage(path), expected, atol: 0, "PNG round trip")
        }
    }

    func testMakeGridOfAListStacksIt() {
        let imgs = (0..<3).map { torch.full([3, 2, 2], Double($0)) }
        let grid = utils.makeGrid(imgs, nrow: 3, padding: 1)
        XCTAssertEqual(grid.shape, [3, 4, 10])
        XCTAssertEqual(grid[0, 1, 7].item(), 2)
        XCTAssertEqual(grid[0, 0, 0].item(), 0)
    }
}

/// `utils.drawSegmentationMasks` against torchvision's `draw_segmentation_masks`.
final class DrawSegmentationMasksTests: XCTestCase {
    func testMasksMatchTorchvision() {
        let cases = TransformsFixture.of("masks")
        XCTAssertEqual(cases.count, 3)
        for c in cases {
            let x = c["dtype"] as! String == "uint8" ? TransformsFixture.image : TransformsFixture.floatImage
            let masks = TransformsFixture.tensor(TransformsFixture.of("mask_input")[0]["masks"]!).to(.bool)
            let colors = (c["colors"] as? [[NSNumber]])?.map { $0.map { $0.doubleValue } }
            let y = utils.drawSegmentationMasks(x, masks, alpha: (c["alpha"] as! NSNumber).doubleValue, colors: colors)
            let expected = TransformsFixture.tensor(c["output"]!)
            assertImagesClose(y, expected, atol: expected.dtype.isFloatingPoint ? 1e-5 : 0, "masks \(c["dtype"]!) alpha \(c["alpha"]!)")
        }
    }
}

/// `utils.drawBoundingBoxes` against torchvision's `draw_bounding_boxes` (Pillow's rectangles).
final class DrawBoundingBoxesTests: XCTestCase {
    func testBoxesMatchTorchvision() {
        let cases = TransformsFixture.of("boxes")
        XCTAssertEqual(cases.count, 5)
        for c in cases {
            let dt = c["dtype"] as! String
            let img = TransformsFixture.image
            let x = dt == "float32" ? TransformsFixture.floatImage : (dt == "grey" ? img[0..<1] : img)
            let a = c["args"] as! [String: Any]
            let colors = (a["colors"] as? [[NSNumber]])?.map { $0.map { $0.doubleValue } }
            let y = utils.drawBoundingBoxes(x, TransformsFixture.tensor(c["boxes"]!), colors: colors,
                                            fill: a["fill"] as? Bool ?? false, width: a["width"] as? Int ?? 1)
            let expected = TransformsFixture.tensor(c["output"]!)
            assertImagesClose(y, expected, atol: expected.dtype.isFloatingPoint ? 1e-6 : 0, "boxes \(dt) \(a)")
        }
    }
}
