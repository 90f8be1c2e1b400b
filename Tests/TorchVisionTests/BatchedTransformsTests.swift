import XCTest
@testable import TorchVision
@testable import Torch

/// Random pipelines on stacked batches (`Compose.applyToBatch` with per-sample draws): the same values and the
/// same generator state as transforming sample by sample and stacking.
final class BatchedTransformsTests: XCTestCase {
    /// `t` sample by sample, then on the batch, from the same seed; also checks the generator ends in the same state.
    private func assertBatchEqualsPerSample(_ t: transforms.Compose, _ batch: Tensor, seed: UInt64,
                                            file: StaticString = #filePath, line: UInt = #line) {
        torch.manualSeed(seed)
        let one = torch.stack((0..<batch.shape[0]).map { t(batch[$0]) })
        let after = torch.defaultGenerator.random()
        torch.manualSeed(seed)
        guard let all = t.applyToBatch(batch) else { return XCTFail("\(t) did not run batch-wise", file: file, line: line) }
        XCTAssertEqual(torch.defaultGenerator.random(), after, "generator state", file: file, line: line)
        XCTAssertEqual(all.shape, one.shape, file: file, line: line)
        XCTAssertEqual(all.dtype, one.dtype, file: file, line: line)
        XCTAssertEqual(all.toArray(as: Double.self), one.toArray(as: Double.self), file: file, line: line)
    }

    func testIssuePipelineOnGreyBatches() {
        let t = transforms.Compose([transforms.ToTensor(), transforms.Normalize([0.5], [0.5]),
                                    transforms.RandomCrop(28, padding: 2), transforms.RandomHorizontalFlip()])
        let batch = torch.randint(0, 256, [16, 28, 28], generator: Generator().manualSeed(1)).to(.uint8)
        for seed: UInt64 in [0, 1, 42] { assertBatchEqualsPerSample(t, batch, seed: seed) }
    }

    func testCropsFlipsAndPaddingModes() {
        let rgb = torch.randint(0, 256, [6, 3, 9, 11], generator: Generator().manualSeed(2)).to(.uint8)
        let pipelines: [transforms.Compose] = [
            transforms.Compose([transforms.RandomCrop([5, 7], padding: [1, 2], paddingMode: .reflect),
                                transforms.RandomVerticalFlip(p: 0.3), transforms.CenterCrop(4)]),
            transforms.Compose([transforms.RandomHorizontalFlip(p: 0.7), transforms.RandomVerticalFlip(),
                                transforms.RandomCrop(12, padIfNeeded: true, fill: 9), transforms.RandomHorizontalFlip()]),
            transforms.Compose([transforms.RandomCrop([6, 8], padding: [2, -1, 0, 3], fill: 7), transforms.RandomVerticalFlip(),
                                transforms.RandomCrop(9, padIfNeeded: true, fill: 3), transforms.RandomHorizontalFlip()]),
            transforms.Compose([transforms.ConvertImageDtype(.float32), transforms.RandomCrop([9, 11]),
                                transforms.Normalize([0.1, 0.2, 0.3], [0.5, 0.5, 0.5]), transforms.RandomCrop([3], padding: [1, 0, 2, 3], paddingMode: .edge)]),
        ]
        for t in pipelines {
            for seed: UInt64 in [3, 4] { assertBatchEqualsPerSample(t, rgb, seed: seed) }
        }
        // H×W×C pictures through ToTensor first.
        let hwc = torch.randint(0, 256, [4, 8, 8, 3], generator: Generator().manualSeed(5)).to(.uint8)
        assertBatchEqualsPerSample(transforms.Compose([transforms.ToTensor(), transforms.RandomCrop(6), transforms.RandomHorizontalFlip()]),
                                   hwc, seed: 6)
    }

    func testPipelinesWithAPerImageOnlyPartDrawNothing() {
        let t = transforms.Compose([transforms.RandomCrop(4), transforms.Lambda { $0 * 2 }])
        let batch = torch.zeros(3, 1, 6, 6)
        torch.manualSeed(8)
        XCTAssertNil(t.applyToBatch(batch))
        let next = torch.defaultGenerator.random()
        torch.manualSeed(8)
        XCTAssertEqual(torch.defaultGenerator.random(), next, "nothing was drawn")
        // A random transform alone still works only per image.
        XCTAssertNil(transforms.RandomHorizontalFlip().applyToBatch(batch))
    }

    func testWindowsComposeLikeTheirSteps() {
        let x = torch.arange(2 * 7 * 9).view(2, 1, 7, 9)
        let sizes = [(h: 7, w: 9), (h: 5, w: 6), (h: 3, w: 4)]
        let first = [SampleWindow(top: 1, left: 2, flipH: true, flipV: false), SampleWindow(top: 2, left: 0, flipH: false, flipV: true)]
        let second = [SampleWindow(top: 2, left: 1, flipH: true, flipV: true), SampleWindow(top: 0, left: 2, flipH: false, flipV: true)]
        let twoSteps = SampleWindow.copy(SampleWindow.copy(x, first, height: 5, width: 6), second, height: 3, width: 4)
        let fused = zip(first, second).map { $0.then($1, size: sizes[1], nextSize: sizes[2]) }
        XCTAssertEqual(SampleWindow.copy(x, fused, height: 3, width: 4).toArray(as: Int.self), twoSteps.toArray(as: Int.self))
        // A plain window is a crop, flips are flips.
        let crop = SampleWindow.copy(x, [SampleWindow(top: 1, left: 2), SampleWindow(top: 1, left: 2, flipH: true, flipV: true)], height: 3, width: 4)
        let box = x[0..., 0..., 1..<4, 2..<6]
        XCTAssertEqual(crop[0].toArray(as: Int.self), box[0].toArray(as: Int.self))
        XCTAssertEqual(crop[1].toArray(as: Int.self), box[1].flip(1, 2).toArray(as: Int.self))
    }
}
