import XCTest
@testable import Torch

/// nn.utils: clipGradNorm_ / clipGradValue_ against PyTorch, parametersToVector /
/// vectorToParameters semantics.
final class ClipGradTests: XCTestCase {
    private func cases(_ kind: String) throws -> [[String: Any]] {
        try loadFixtureCases("losses").filter { $0["kind"] as? String == kind }
    }

    private func parameters(withGrads grads: [Tensor]) -> [nn.Parameter] {
        grads.map { g in
            let p = nn.Parameter(torch.zerosLike(g))
            p.grad = g.clone()
            return p
        }
    }

    func testClipGradNormMatchesPyTorch() throws {
        let all = try cases("clip_norm")
        XCTAssertEqual(all.count, 16)
        for c in all {
            let grads = (c["grads"] as! [Any]).map { fixtureTensor($0) }
            var params: [Tensor] = parameters(withGrads: grads)
            params.append(nn.Parameter(torch.zeros(2, dtype: grads[0].dtype)))   // no grad: skipped
            let normType = (c["norm_type"] as? String) == "inf" ? Double.infinity : (c["norm_type"] as! NSNumber).doubleValue
            let maxNorm = (c["max_norm"] as! NSNumber).doubleValue
            let label = "\(c["dtype"]!) p=\(normType) max=\(maxNorm)"
            let total = nn.utils.clipGradNorm_(params, maxNorm: maxNorm, normType: normType)
            let tol = c["dtype"] as! String == "float64" ? 1e-10 : 2e-6
            assertClose(total, fixtureTensor(c["total"]!), atol: tol, rtol: tol, label)
            XCTAssertEqual(total.dtype, grads[0].dtype, label)
            for (p, expected) in zip(params, c["clipped"] as! [Any]) {
                assertClose(p.grad!, fixtureTensor(expected), atol: tol, rtol: tol, label)
            }
            XCTAssertNil(params.last!.grad)
        }
    }

    func testClipGradNormEdgeCases() {
        // No gradients at all: total norm 0, nothing touched.
        let p = nn.Parameter(torch.ones(3))
        XCTAssertEqual(nn.utils.clipGradNorm_([p], maxNorm: 1).item(), 0)
        XCTAssertNil(p.grad)
        // A single tensor; the norm under the limit scales by min(max/(norm+1e-6), 1) = 1.
        p.grad = torch.tensor([3.0, 4.0, 0.0])
        let total = nn.utils.clipGradNorm_(p, maxNorm: 10)
        XCTAssertEqual(total.item(), 5, accuracy: 1e-6)
        assertClose(p.grad!, [3, 4, 0])
        nn.utils.clipGradNorm_(p, maxNorm: 1)
        assertClose(p.grad!, [0.6, 0.8, 0], atol: 1e-6)
        // Non-finite norms scale by nan when not asked to stop (PyTorch's behaviour).
        p.grad = torch.tensor([Double.infinity, 1, 0])
        XCTAssertTrue(nn.utils.clipGradNorm_(p, maxNorm: 1).item().isInfinite)
        // Works on a model's parameters.
        let model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
        F.mseLoss(model(torch.randn(5, 3)) * 100, torch.zeros(5, 2)).backward()
        nn.utils.clipGradNorm_(model.parameters(), maxNorm: 0.5)
        let after = nn.utils.clipGradNorm_(model.parameters(), maxNorm: 1e9)
        XCTAssertEqual(after.item(), 0.5, accuracy: 1e-5)
    }

    func testClipGradValueMatchesPyTorch() throws {
        let all = try cases("clip_value")
        XCTAssertEqual(all.count, 2)
        for c in all {
            let grads = (c["grads"] as! [Any]).map { fixtureTensor($0) }
            let params = parameters(withGrads: grads)
            nn.utils.clipGradValue_(params, clipValue: (c["clip_value"] as! NSNumber).doubleValue)
            for (p, expected) in zip(params, c["clipped"] as! [Any]) {
                assertClose(p.grad!, fixtureTensor(expected), atol: 0, rtol: 0)
            }
        }
        let p = nn.Parameter(torch.zeros(2))
        p.grad = torch.tensor([-3.0, 0.25])
        nn.utils.clipGradValue_(p, clipValue: 0.5)
        assertClose(p.grad!, [-0.5, 0.25])
    }

    func testParametersToVectorAndBack() {
        let model = nn.Sequential(nn.Linear(3, 2), nn.Linear(2, 1, bias: false))
        let params = model.parameters()
        let vec = nn.utils.parametersToVector(params)
        XCTAssertEqual(vec.shape, [6 + 2 + 2])
        assertClose(vec.narrow(0, 0, 6), params[0].detach().reshape(-1), atol: 0, rtol: 0)
        assertClose(vec.narrow(0, 8, 2), params[2].detach().reshape(-1), atol: 0, rtol: 0)
        // Differentiable (CatBackward0): gradients flow back to each parameter.
        XCTAssertEqual(vec.gradFn?.name, "CatBackward0")
        (vec * torch.arange(10, dtype: .float32)).sum().backward()
        assertClose(params[0].grad!, torch.arange(6, dtype: .float32).reshape(2, 3), atol: 0, rtol: 0)
        assertClose(params[1].grad!, [6, 7], atol: 0, rtol: 0)
        // Non-contiguous parameters are flattened in row-major order.
        let t = torch.arange(6, dtype: .float32).reshape(2, 3).t()
        assertClose(nn.utils.parametersToVector([t]), [0, 3, 1, 4, 2, 5], atol: 0, rtol: 0)

        // Back: each parameter becomes a view of its slice (same objects, shared memory).
        let newValues = torch.arange(10, dtype: .float32) * 0.5
        let identities = params.map { ObjectIdentifier($0) }
        nn.utils.vectorToParameters(newValues, params)
        XCTAssertEqual(model.parameters().map { ObjectIdentifier($0) }, identities)
        XCTAssertEqual(params[0].shape, [2, 3])
        assertClose(params[1], [3.0, 3.5], atol: 0, rtol: 0)
        XCTAssertTrue(params[0].requiresGrad)
        newValues.mul_(2)
        assertClose(params[2], [8, 9], atol: 0, rtol: 0)
        let y = model(torch.ones(1, 3))
        XCTAssertEqual(y.shape, [1, 1])
        XCTAssertEqual(vectorToParametersSizeMessage(vec: [3], needed: 10),
                       "vectorToParameters: expected a 1-D vector of at least 10 elements for the parameters, got shape [3]")
    }
}
