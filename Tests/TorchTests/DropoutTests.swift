import XCTest
@testable import Torch

/// Dropout variants: PyTorch's exact masks for a seed, statistics, train/eval behaviour,
/// in-place forms, autograd and messages.
final class DropoutTests: XCTestCase {
    private func cases(_ kind: String) throws -> [[String: Any]] {
        try loadFixtureCases("norm_layers").filter { $0["kind"] as? String == kind }
    }

    private func apply(_ fn: String, _ x: Tensor, _ p: Double) -> Tensor {
        switch fn {
        case "dropout": return F.dropout(x, p: p)
        case "alpha_dropout": return F.alphaDropout(x, p: p, training: true)
        case "dropout1d": return F.dropout1d(x, p: p)
        case "dropout2d": return F.dropout2d(x, p: p)
        case "dropout3d": return F.dropout3d(x, p: p)
        default: fatalError(fn)
        }
    }

    func testMasksMatchPyTorchForASeed() throws {
        let all = try cases("dropout")
        XCTAssertEqual(all.count, 25)
        for c in all {
            let fn = c["fn"] as! String, p = c["p"] as! Double, layout = c["layout"] as! String
            let label = "\(fn) p=\(p) \(layout)"
            let x: Tensor = (c["input"] as? String) == "ones"
                ? torch.ones(c["shape"] as! [Int]) : fixtureTensor(c["input"]!, layout: layout)
            torch.manualSeed(UInt64(c["seed"] as! Int))
            let y = apply(fn, x, p)
            // Exact, up to the last bit Foundation's JSON parser may lose on float64 literals.
            assertClose(y, fixtureTensor(c["output"]!), atol: 0, rtol: y.dtype == .float64 ? 1e-15 : 0, label)
            // The generator advanced exactly as PyTorch's did.
            assertClose(torch.rand(3), fixtureTensor(c["rand_after"]!), atol: 0, rtol: 0, "\(label) rng state")
        }
    }

    func testStatistics() {
        let x = torch.ones(400, 500)
        for p in [0.1, 0.5, 0.8] {
            let y = F.dropout(x, p: p)
            let zeroed = (y .== 0).to(.float64).mean().item()
            XCTAssertEqual(zeroed, p, accuracy: 0.01, "p=\(p)")
            let scale = Double(Float(1) / Float(1 - p))
            let offScale = (y .!= 0) & (y .!= scale)
            XCTAssertEqual(offScale.to(.float32).sum().item(), 0, "kept values are 1/(1-p)")
            XCTAssertEqual(y.mean().item(), 1, accuracy: 0.02, "expectation kept")
        }
        // Alpha dropout keeps zero mean and unit variance of a standard normal input.
        let z = torch.randn(400, 500)
        let a = F.alphaDropout(z, p: 0.3, training: true)
        XCTAssertEqual(a.mean().item(), 0, accuracy: 0.02)
        XCTAssertEqual(a.std().item(), 1, accuracy: 0.02)
        // Channel dropout zeroes whole channels.
        let c = F.dropout2d(torch.ones(50, 40, 3, 3), p: 0.4)
        let perChannel = c.sum(dim: [2, 3])
        let partial = (perChannel .!= 0) & (perChannel .!= 9 * Double(Float(1) / Float(0.6)))
        XCTAssertEqual(partial.to(.float32).sum().item(), 0)
        XCTAssertEqual((perChannel .== 0).to(.float64).mean().item(), 0.4, accuracy: 0.05)
    }

    func testTrainEvalAndIdentityCases() {
        let x = torch.randn(4, 5)
        for m in [nn.Dropout(), nn.AlphaDropout(0.3), nn.Dropout1d(), nn.Dropout2d(), nn.Dropout3d()] as [nn.Module] {
            m.eval()
            XCTAssertTrue(m(x) === x, m.description)
        }
        let d = nn.Dropout(0.4)
        XCTAssertTrue(d.training)
        XCTAssertFalse(d(torch.ones(30, 30)).equal(torch.ones(30, 30)))
        XCTAssertTrue(F.dropout(x, p: 0) === x)
        XCTAssertTrue(F.dropout(x, p: 0.5, training: false) === x)
        XCTAssertTrue(F.alphaDropout(x, p: 0.5) === x, "alpha_dropout's default is training: false")
        XCTAssertEqual(F.dropout(x, p: 1).abs().sum().item(), 0)
        // p = 1 draws nothing from the generator.
        torch.manualSeed(5)
        _ = F.dropout(x, p: 1)
        let after = torch.rand(2)
        torch.manualSeed(5)
        assertClose(after, torch.rand(2), atol: 0, rtol: 0)
    }

    func testAutogradAndInPlace() {
        let leaf = torch.randn(6, 7, requiresGrad: true)
        torch.manualSeed(3)
        let y = F.dropout(leaf, p: 0.3)
        XCTAssertEqual(y.gradFn?.name, "MulBackward0")
        y.sum().backward()
        let mask = torch.noGrad { torch.where(y.detach() .!= 0, torch.fullLike(y, Double(Float(1) / Float(0.7))), torch.zerosLike(y)) }
        assertClose(leaf.grad!, mask, atol: 0, rtol: 0)
        XCTAssertEqual(F.dropout(leaf, p: 1).gradFn?.name, "MulBackward0")
        XCTAssertEqual(F.alphaDropout(leaf, p: 0.2, training: true).gradFn?.name, "AddBackward0")
        XCTAssertEqual(F.dropout2d(torch.randn(2, 3, 2, 2, requiresGrad: true), p: 0.5).gradFn?.name, "MulBackward0")

        // In place: same object, same values as out of place with the same seed.
        let x = torch.randn(5, 5)
        torch.manualSeed(9)
        let ref = F.dropout(x, p: 0.5)
        let x2 = x.clone()
        torch.manualSeed(9)
        let r = nn.Dropout(0.5, inplace: true)(x2)
        XCTAssertTrue(r === x2)
        assertClose(x2, ref, atol: 0, rtol: 0)
        let z = x.clone()
        torch.manualSeed(9)
        XCTAssertTrue(F.dropout1d(z, p: 0.5, inplace: true) === z)

        // gradcheck with the mask fixed by reseeding before every evaluation.
        for fn in ["dropout", "alpha_dropout", "dropout2d"] {
            gradcheck([torch.randn(3, 4, 2, dtype: .float64)]) { xs in
                torch.manualSeed(11)
                return self.apply(fn, xs[0], 0.35)
            }
        }
    }

    func testDoubleAndHalfInputs() {
        let xd = torch.ones(50, 40, dtype: .float64)
        torch.manualSeed(2)
        let yd = F.dropout(xd, p: 0.3)
        XCTAssertEqual(yd.dtype, .float64)
        torch.manualSeed(2)
        let yf = F.dropout(torch.ones(50, 40), p: 0.3)
        XCTAssertTrue(((yd .== 0) .== (yf .== 0)).all().item() == 1, "same mask for float and double")
        let h = F.dropout(torch.ones(10, 10).half(), p: 0.5)
        XCTAssertEqual(h.dtype, .float16)
    }

    func testReprsAndMessages() throws {
        for c in try cases("dropout_repr") {
            let m: nn.Module
            switch c["name"] as! String {
            case "Dropout": m = (c["repr"] as! String).contains("0.2") ? nn.Dropout(0.2, inplace: true) : nn.Dropout()
            case "AlphaDropout": m = nn.AlphaDropout(p: 0.2)
            case "Dropout1d": m = nn.Dropout1d()
            case "Dropout2d": m = nn.Dropout2d(0.3)
            default: m = nn.Dropout3d()
            }
            XCTAssertEqual(m.description, c["repr"] as! String)
        }
        XCTAssertEqual(dropoutProbabilityMessage(1.5), "dropout probability has to be between 0 and 1, but got 1.5")
        XCTAssertEqual(dropoutProbabilityMessage(-0.1), "dropout probability has to be between 0 and 1, but got -0.1")
        XCTAssertNil(dropoutProbabilityMessage(1))
        XCTAssertTrue(isNonOverlappingAndDense(torch.randn(3, 4).t()))
        XCTAssertTrue(isNonOverlappingAndDense(torch.randn(2, 3, 4).permute(2, 0, 1)))
        XCTAssertFalse(isNonOverlappingAndDense(torch.randn(3, 8).slice(1, start: 0, end: 8, step: 2)))
        XCTAssertFalse(isNonOverlappingAndDense(torch.randn(3, 1).expand(3, 4)))
    }
}
