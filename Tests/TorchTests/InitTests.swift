import XCTest
@testable import Torch

/// nn.init and the layers' default initialisation: PyTorch's exact draws and statistics.
final class InitTests: XCTestCase {
    final class MyNeuralNet: nn.Module {
        let inputToHiddenLayer = nn.Linear(2, 8)
        let hiddenLayerActivation = nn.ReLU()
        let hiddenToOutputLayer = nn.Linear(8, 1)
        override func forward(_ x: Tensor) -> Tensor {
            hiddenToOutputLayer(hiddenLayerActivation(inputToHiddenLayer(x)))
        }
    }

    private func fixture(_ kind: String, _ name: String) throws -> [String: Any] {
        try loadFixtureCases("nn_layers").first { $0["kind"] as? String == kind && $0["name"] as? String == name }!
    }

    func testGeneratorMatchesPyTorch() throws {
        torch.manualSeed(0)
        let r = torch.rand(3)
        assertClose(r, [0.4963, 0.7682, 0.0885], atol: 1e-4)
        assertClose(r, fixtureTensor(try fixture("rand", "rand3")["y"]!), atol: 0, rtol: 0)
    }

    func testLinearDefaultInitIsPyTorchExact() throws {
        let c = try fixture("init", "linear_2_8")
        torch.manualSeed(0)
        let fc = nn.Linear(2, 8)
        assertClose(fc.weight, fixtureTensor(c["weight"]!), atol: 0, rtol: 0)
        assertClose(fc.bias!, fixtureTensor(c["bias"]!), atol: 0, rtol: 0)

        let b = try fixture("init", "bilinear_2_3_4")
        torch.manualSeed(0)
        let bil = nn.Bilinear(2, 3, 4)
        assertClose(bil.weight, fixtureTensor(b["weight"]!), atol: 0, rtol: 0)
        assertClose(bil.bias!, fixtureTensor(b["bias"]!), atol: 0, rtol: 0)
    }

    func testRosettaNetworkInitIsPyTorchExact() throws {
        let c = try fixture("init_state", "mynet")
        torch.manualSeed(0)
        let net = MyNeuralNet()
        let sd = net.stateDict()
        let expected = c["state"] as! [[Any]]
        XCTAssertEqual(sd.keys, expected.map { $0[0] as! String })
        for (t, e) in zip(sd.values, expected) { assertClose(t, fixtureTensor(e[1]), atol: 0, rtol: 0) }
    }

    /// float64 tolerances are 1e-15 only because JSONSerialization on Linux may round the
    /// fixture's decimal strings in the last bit.
    func testInitFunctionsMatchPyTorch() throws {
        let specs: [(String, [Int], DType, Double, (Tensor) -> Void)] = [
            ("uniform", [3, 4], .float32, 0, { nn.init_.uniform_($0, -0.5, 2.0) }),
            ("uniform_f64", [3, 4], .float64, 1e-15, { nn.init_.uniform_($0, a: -0.5, b: 2.0) }),
            ("normal_small", [3, 4], .float32, 0, { nn.init_.normal_($0, 1.0, 0.5) }),
            ("normal_large", [5, 7], .float32, 0, { nn.init_.normal_($0, mean: 1.0, std: 0.5) }),
            ("normal_f64", [5, 7], .float64, 1e-15, { nn.init_.normal_($0, 0.0, 2.0) }),
            ("xavier_uniform", [3, 5], .float32, 0, { nn.`init`.xavierUniform_($0, gain: 2) }),
            ("xavier_normal", [20, 30], .float32, 0, { nn.init_.xavierNormal_($0) }),
            ("kaiming_uniform", [4, 3, 2], .float32, 0, { nn.init_.kaimingUniform_($0, mode: .fanOut, nonlinearity: .relu) }),
            ("kaiming_normal", [20, 30], .float32, 0, { nn.init_.kaimingNormal_($0, a: 0.1) }),
            ("orthogonal_wide", [3, 5], .float32, 1e-5, { nn.init_.orthogonal_($0) }),
            ("orthogonal_tall", [6, 4], .float32, 1e-5, { nn.init_.orthogonal_($0, gain: 2) }),
            ("orthogonal_4d", [4, 2, 2, 2], .float32, 1e-5, { nn.init_.orthogonal_($0) }),
            ("trunc_normal", [50], .float32, 0, { nn.init_.truncNormal_($0, mean: 0.5, std: 2, a: -1, b: 3) }),
            ("trunc_normal_f64", [50], .float64, 1e-15, { nn.init_.truncNormal_($0) }),
            ("trunc_normal_tail", [40], .float32, 0, { nn.init_.truncNormal_($0, a: 2, b: 4) }),
            ("eye", [3, 4], .float32, 0, { nn.init_.eye_($0) }),
        ]
        for (name, shape, dtype, tol, fn) in specs {
            torch.manualSeed(0)
            let t = torch.empty(shape, dtype: dtype)
            fn(t)
            assertClose(t, fixtureTensor(try fixture("init_fn", name)["y"]!), atol: tol, rtol: tol, name)
        }
    }

    func testCalculateGain() throws {
        let gains = try fixture("gains", "gains")["gains"] as! [String: Double]
        for (key, expected) in gains {
            let parts = key.split(separator: ":").map(String.init)
            let param = parts[1] == "None" ? nil : Double(parts[1])
            XCTAssertEqual(nn.init_.calculateGain(nn.init_.Nonlinearity(parts[0]), param: param), expected, accuracy: 1e-15, key)
        }
        XCTAssertEqual(nn.init_.calculateGain(.relu), 2.0.squareRoot())
        XCTAssertEqual(nn.init_.calculateGain("tanh"), 5.0 / 3)
    }

    func testInitStatistics() {
        let w = torch.empty(400, 250)
        nn.init_.kaimingUniform_(w, a: 5.0.squareRoot())
        let bound = 1 / 250.0.squareRoot()
        XCTAssertLessThanOrEqual(w.abs().max().item(), bound)
        XCTAssertGreaterThan(w.abs().max().item(), bound * 0.99)
        XCTAssertEqual(w.std().item(), bound / 3.0.squareRoot(), accuracy: bound * 0.02)

        nn.init_.kaimingNormal_(w, mode: .fanOut, nonlinearity: .relu)
        XCTAssertEqual(w.std().item(), (2.0 / 400).squareRoot(), accuracy: 0.002)
        XCTAssertEqual(w.mean().item(), 0, accuracy: 0.002)

        nn.init_.xavierUniform_(w)
        let a = (6.0 / 650).squareRoot()
        XCTAssertLessThanOrEqual(w.abs().max().item(), a)
        XCTAssertEqual(w.std().item(), a / 3.0.squareRoot(), accuracy: a * 0.02)

        nn.init_.xavierNormal_(w, gain: 2)
        XCTAssertEqual(w.std().item(), 2 * (2.0 / 650).squareRoot(), accuracy: 0.002)

        let t = torch.empty(20000)
        nn.init_.truncNormal_(t, mean: 1, std: 0.5, a: 0, b: 1.5)
        XCTAssertGreaterThanOrEqual(t.min().item(), 0)
        XCTAssertLessThanOrEqual(t.max().item(), 1.5)

        nn.init_.constant_(t, 0.25)
        XCTAssertEqual(t.mean().item(), 0.25)
        nn.init_.ones_(t)
        XCTAssertEqual(t.sum().item(), 20000)
    }

    func testOrthogonalIsOrthogonal() {
        for shape in [[30, 10], [10, 30], [8, 2, 3]] {
            let w = torch.empty(shape)
            nn.init_.orthogonal_(w, gain: 1.5)
            let m = w.reshape(shape[0], -1)
            let gram = shape[0] >= m.shape[1] ? m.t().mm(m) : m.mm(m.t())
            assertClose(gram, torch.eye(gram.shape[0]) * 2.25, atol: 1e-5)
        }
    }

    func testInitDoesNotRecordAndKeepsLeaves() {
        let fc = nn.Linear(3, 3)
        nn.init_.xavierUniform_(fc.weight)
        nn.init_.zeros_(fc.bias!)
        XCTAssertTrue(fc.weight.isLeaf && fc.weight.requiresGrad)
        XCTAssertTrue(fc.bias!.isLeaf)
        XCTAssertEqual(fc.bias!.abs().sum().item(), 0)
    }
}
