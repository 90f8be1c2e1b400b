import XCTest
@testable import Torch

/// nn.Linear, nn.Bilinear, nn.Identity, nn.Flatten, nn.Unflatten against PyTorch.
final class LinearTests: XCTestCase {
    private func cases(_ kind: String) throws -> [[String: Any]] {
        try loadFixtureCases("nn_layers").filter { $0["kind"] as? String == kind }
    }

    private func tol(_ t: Tensor) -> Double { t.dtype == .float64 ? 1e-10 : 2e-5 }

    func testLinearMatchesPyTorch() throws {
        let all = try cases("linear")
        XCTAssertEqual(all.count, 8)
        for c in all {
            let name = c["name"] as! String
            let w = fixtureTensor(c["w"]!)
            let hasBias = c["b"] != nil
            let layer = nn.Linear(w.shape[1], w.shape[0], bias: hasBias, dtype: w.dtype)
            // PyTorch's weights go in through the state dict.
            var sd: OrderedDict<Tensor> = ["weight": w]
            if hasBias { sd["bias"] = fixtureTensor(c["b"]!) }
            try layer.loadStateDict(sd)
            for layout in ["contiguous", "transposed", "sliced"] {
                let x = fixtureTensor(c["x"]!, layout: layout).requiresGrad_()
                layer.zeroGrad()
                let y = layer(x)
                assertClose(y, fixtureTensor(c["y"]!), atol: tol(y), rtol: tol(y), "\(name) \(layout)")
                y.backward(fixtureTensor(c["g"]!))
                assertClose(x.grad!, fixtureTensor(c["gx"]!), atol: tol(y), rtol: tol(y), "\(name) \(layout) gx")
                assertClose(layer.weight.grad!, fixtureTensor(c["gw"]!), atol: tol(y), rtol: tol(y), "\(name) \(layout) gw")
                if hasBias {
                    assertClose(layer.bias!.grad!, fixtureTensor(c["gb"]!), atol: tol(y), rtol: tol(y), "\(name) \(layout) gb")
                }
            }
        }
    }

    func testLinear2DUsesAddmm() {
        let fc = nn.Linear(3, 2)
        XCTAssertEqual(fc(torch.randn(4, 3)).gradFn?.name, "AddmmBackward0")
        XCTAssertEqual(nn.Linear(3, 2, bias: false)(torch.randn(4, 3)).gradFn?.name, "MmBackward0")
        XCTAssertEqual(fc(torch.randn(2, 5, 3)).shape, [2, 5, 2])
        XCTAssertEqual(fc(torch.randn(3)).shape, [2])
        XCTAssertEqual(fc.weight.shape, [2, 3])
        XCTAssertEqual(fc.bias!.shape, [2])
        XCTAssertTrue(fc.weight.requiresGrad && fc.weight.isLeaf)
    }

    func testLinearGradcheck() {
        let w = torch.randn(4, 3), b = torch.randn(4)
        gradcheck([torch.randn(5, 3), w, b]) { F.linear($0[0], $0[1], $0[2]) }
        gradcheck([torch.randn(2, 2, 3), w, b]) { F.linear($0[0], $0[1], $0[2]) }
        gradcheck([torch.randn(3), w]) { F.linear($0[0], $0[1]) }
    }

    func testBilinearMatchesPyTorch() throws {
        let c = try cases("bilinear")[0]
        let w = fixtureTensor(c["w"]!)
        let m = nn.Bilinear(2, 4, 5, dtype: .float64)
        try m.loadStateDict(["weight": w, "bias": fixtureTensor(c["b"]!)])
        let x1 = fixtureTensor(c["x1"]!).requiresGrad_(), x2 = fixtureTensor(c["x2"]!).requiresGrad_()
        let y = m(x1, x2)
        assertClose(y, fixtureTensor(c["y"]!), atol: 1e-10)
        y.backward(fixtureTensor(c["g"]!))
        assertClose(x1.grad!, fixtureTensor(c["gx1"]!), atol: 1e-10)
        assertClose(x2.grad!, fixtureTensor(c["gx2"]!), atol: 1e-10)
        assertClose(m.weight.grad!, fixtureTensor(c["gw"]!), atol: 1e-10)
        assertClose(m.bias!.grad!, fixtureTensor(c["gb"]!), atol: 1e-10)
        gradcheck([torch.randn(2, 3, 2), torch.randn(2, 3, 4), torch.randn(5, 2, 4), torch.randn(5)]) {
            F.bilinear($0[0], $0[1], $0[2], $0[3])
        }
    }

    func testIdentityFlattenUnflatten() {
        let x = torch.randn(2, 3, 4)
        XCTAssertTrue(nn.Identity()(x) === x)
        XCTAssertEqual(nn.Flatten()(x).shape, [2, 12])
        XCTAssertEqual(nn.Flatten(startDim: 0, endDim: 1)(x).shape, [6, 4])
        XCTAssertEqual(nn.Unflatten(1, [3, 4])(torch.randn(2, 12)).shape, [2, 3, 4])
        let model = nn.Sequential(nn.Flatten(), nn.Linear(12, 2))
        XCTAssertEqual(model(x).shape, [2, 2])
    }
}
