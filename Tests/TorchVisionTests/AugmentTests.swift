import Foundation
import XCTest
@testable import TorchVision
@testable import Torch

/// AutoAugment and AugMix against torchvision 0.29 (Tests/Fixtures/augment.json, written by
/// scripts/fixtures/augment.py): the random choices for a seed, and the outputs under a seed on the uint8 photo
/// crop as a tensor (within 1 grey level, as the other tensor kernels) and as a PIL-style picture.
final class AugmentTests: XCTestCase {
    private static let cases: [[String: Any]] = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/augment.json")
        let data = try! Data(contentsOf: url)
        return (try! JSONSerialization.jsonObject(with: data) as! [String: Any])["cases"] as! [[String: Any]]
    }()

    private func of(_ kind: String) -> [[String: Any]] { Self.cases.filter { $0["kind"] as? String == kind } }

    private static let transformsByName: [(String, any transforms.Transform)] = [
        ("AutoAugment_imagenet", transforms.AutoAugment(.imagenet)),
        ("AutoAugment_cifar10", transforms.AutoAugment(.cifar10)),
        ("AutoAugment_svhn", transforms.AutoAugment(policy: .svhn)),
        ("AutoAugment_svhn_bilinear_fill", transforms.AutoAugment(.svhn, interpolation: .bilinear, fill: [20, 40, 60])),
        ("AugMix", transforms.AugMix()),
        ("AugMix_custom", transforms.AugMix(severity: 6, mixtureWidth: 2, chainDepth: 2, alpha: 2, allOps: false, fill: [9, 9, 9])),
    ]

    private func transform(_ name: String) -> any transforms.Transform {
        Self.transformsByName.first { $0.0 == name }!.1
    }

    func testAutoAugmentParametersMatchTorchvision() {
        for c in of("params") {
            torch.manualSeed(UInt64(c["seed"] as! Int))
            let (id, probs, signs) = transforms.AutoAugment.getParams(transformNum: 25)
            let want = c["params"] as! [Any]
            XCTAssertEqual(id, want[0] as! Int)
            XCTAssertEqual(probs.map { Float($0) }, (want[1] as! [NSNumber]).map { $0.floatValue })
            XCTAssertEqual(signs, want[2] as! [Int])
        }
        XCTAssertEqual(transforms.AutoAugmentPolicy.allCases.map { $0.subPolicies.count }, [25, 25, 25])
    }

    func testDirichletWeightsMatchTorch() {
        for c in of("dirichlet") {
            torch.manualSeed(UInt64(c["seed"] as! Int))
            let alpha = (c["alpha"] as! [NSNumber]).map { $0.doubleValue }
            let w = torch._sampleDirichlet(Tensor(alpha, shape: [alpha.count]).float().expand(c["rows"] as! Int, -1))
            let want = TransformsFixture.tensor(c["output"]!)
            XCTAssertEqual(w.shape, want.shape)
            XCTAssertEqual(w.toArray(as: Float.self), want.toArray(as: Float.self))
        }
    }

    func testSeededTensorOutputsMatchTorchvision() {
        let cases = of("forward")
        XCTAssertEqual(cases.count, 18)
        for c in cases {
            let name = c["name"] as! String, seed = c["seed"] as! Int
            let t = transform(name)
            torch.manualSeed(UInt64(seed))
            for (k, e) in (c["outputs"] as! [Any]).enumerated() {
                assertImagesClose(t(TransformsFixture.image), TransformsFixture.tensor(e), atol: 1, "\(name) seed \(seed) call \(k)")
            }
        }
    }

    func testSeededPictureOutputsMatchTorchvision() {
        let photo = Image(tensor: TransformsFixture.image)
        for c in of("pil") {
            let name = c["name"] as! String, seed = c["seed"] as! Int
            let t = transform(name)
            torch.manualSeed(UInt64(seed))
            // AutoAugment runs Pillow's operations (exact); AugMix mixes the picture as a tensor (1 grey level).
            let atol: Double = name.hasPrefix("AugMix") ? 1 : 0
            for (k, e) in (c["outputs"] as! [Any]).enumerated() {
                let out: Image = t(photo)
                assertImagesClose(out.tensor(), TransformsFixture.tensor(e), atol: atol, "\(name) picture seed \(seed) call \(k)")
            }
        }
    }

    func testAugMixOnABatchDrawsWeightsPerImage() {
        let c = of("batch")[0]
        torch.manualSeed(UInt64(c["seed"] as! Int))
        let image = TransformsFixture.image
        let batch = torch.stack([image, transforms.functional.hflip(image)])
        assertImagesClose(transforms.AugMix()(batch), TransformsFixture.tensor(c["output"]!), atol: 1, "batch")
    }

    func testReprsMatchTorchvision() {
        let lines = of("repr")[0]["lines"] as! [String]
        let ours = Self.transformsByName.map { "\($0.1)" } + ["\(transforms.AugMix(fill: [1, 2, 3]))"]
        XCTAssertEqual(ours, lines)
    }

    func testOperationSpacesKeepTorchvisionsOrder() {
        typealias S = transforms.AugmentSpace
        XCTAssertEqual(S.randAugment.ops.map(\.rawValue),
                       ["Identity", "ShearX", "ShearY", "TranslateX", "TranslateY", "Rotate", "Brightness", "Color", "Contrast",
                        "Sharpness", "Posterize", "Solarize", "AutoContrast", "Equalize"])
        XCTAssertEqual(S.autoAugment.ops.last, .invert)
        XCTAssertEqual(S.augMix(allOps: false).ops.map(\.rawValue),
                       ["ShearX", "ShearY", "TranslateX", "TranslateY", "Rotate", "Posterize", "Solarize", "AutoContrast", "Equalize"])
        XCTAssertEqual(S.augMix(allOps: true).ops.count, 13)
        // AugMix's posterize bits: 4 - round(arange(10) / (9 / 4)).
        XCTAssertEqual(S.augMix(allOps: true).magnitudes(.posterize, bins: 10, imageSize: (8, 8)).0, [4, 4, 3, 3, 2, 2, 1, 1, 0, 0])
        XCTAssertEqual(S.augMix(allOps: true).magnitudes(.translateX, bins: 10, imageSize: (9, 30)).0.last, 10)
    }
}
