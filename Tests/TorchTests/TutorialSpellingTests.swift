import XCTest
@testable import Torch

/// Tutorial lines that must compile as docs/architecture.md §1's rules translate them, each spelling checked
/// against the other spelling of the same call.
final class TutorialSpellingTests: XCTestCase {
    func testChoosingADeviceFromArguments() throws {
        let auto: Device = torch.cuda.isAvailable() ? .cuda(0) : .cpu
        XCTAssertEqual(try Device(choosing: "auto"), auto)
        XCTAssertEqual(try Device(choosing: "cpu"), .cpu)
        XCTAssertThrowsError(try Device(choosing: "gpu")) { XCTAssertEqual($0 as? DeviceChoiceError, .unknownName("gpu")) }
        XCTAssertThrowsError(try Device(choosing: "cuda:x")) { XCTAssertEqual($0 as? DeviceChoiceError, .unknownName("cuda:x")) }
        XCTAssertThrowsError(try Device(choosing: "cuda:99")) { error in
            guard case .unavailable(let why)? = error as? DeviceChoiceError else { return XCTFail("\(error)") }
            XCTAssertTrue(why.hasPrefix("device cuda:99: "), why)
        }
        let (d, rest) = try Device.fromArguments(["prog", "data", "--device", "cpu", "3"])
        XCTAssertEqual(d, .cpu)
        XCTAssertEqual(rest, ["prog", "data", "3"])
        XCTAssertEqual(try Device.fromArguments(["prog", "--device=cpu"]).remaining, ["prog"])
        XCTAssertEqual(try Device.fromArguments(["prog"]).device, auto)
        XCTAssertThrowsError(try Device.fromArguments(["prog", "--device"]))
    }

    func testDeviceSpellings() {
        let device = torch.device(torch.cuda.isAvailable() ? "cuda" : "cpu")
        XCTAssertEqual(device, .cpu)
        XCTAssertEqual(torch.device("cuda:1"), .cuda(1))
        XCTAssertEqual(torch.device("cuda", 2), .cuda(2))
        let literal: Device = "cpu"
        XCTAssertEqual(literal, .cpu)
        let dtype = torch.float64
        let x = torch.randn(4, 3, device: device, dtype: dtype)
        XCTAssertEqual(x.shape, [4, 3]); XCTAssertEqual(x.dtype, .float64); XCTAssertEqual(x.device, .cpu)
        XCTAssertEqual(torch.randn(2, dtype: dtype, device: device).dtype, .float64)
        XCTAssertEqual(torch.rand(2, 2, device: "cpu").shape, [2, 2])
        XCTAssertEqual(torch.zeros(2, device: device, dtype: .int64).dtype, .int64)
        XCTAssertEqual(torch.ones(3, device: device).toArray(as: Float.self), [1, 1, 1])
        XCTAssertEqual(torch.empty(2, 3, device: device).shape, [2, 3])
        XCTAssertEqual(torch.full([2], 7.0, device: device).toArray(as: Float.self), [7, 7])
        XCTAssertEqual(torch.arange(5, device: device).toArray(as: Int64.self), [0, 1, 2, 3, 4])
        XCTAssertEqual(torch.tensor([1, 2], device: device, dtype: .float32).dtype, .float32)
        XCTAssertEqual(torch.tensor([1, 2], dtype: .float32, device: device).dtype, .float32)
        XCTAssertEqual(torch.eye(2, device: device).toArray(as: Float.self), [1, 0, 0, 1])
        XCTAssertEqual(torch.linspace(0, 1, steps: 3, device: device).toArray(as: Float.self), [0, 0.5, 1])
        XCTAssertEqual(torch.randint(0, 10, [4], device: device).shape, [4])
        XCTAssertEqual(torch.zerosLike(x, device: device).shape, [4, 3])
        XCTAssertEqual(torch.randperm(4, device: device).shape, [4])
        // requiresGrad: on the floating creation functions too.
        XCTAssertTrue(torch.arange(0.0, 3.0, requiresGrad: true).requiresGrad)
        XCTAssertTrue(torch.linspace(0, 1, steps: 4, requiresGrad: true).requiresGrad)
        XCTAssertTrue(torch.linspace(0, 1, steps: 1, requiresGrad: true).requiresGrad)
        XCTAssertTrue(torch.logspace(0, 1, steps: 3, requiresGrad: true).requiresGrad)
        XCTAssertTrue(torch.randnLike(x, requiresGrad: true).requiresGrad)
        XCTAssertTrue(torch.normal(0, 1, [2], requiresGrad: true).requiresGrad)
        XCTAssertFalse(torch.arange(0.0, 3.0).requiresGrad)
    }

    func testDataIsADetachedViewThatCanBeAssigned() {
        let w = torch.tensor([1.0, 2.0], requiresGrad: true)
        let y = (w * 3).sum()
        y.backward()
        let d = w.data
        XCTAssertFalse(d.requiresGrad)
        XCTAssertNil(d.gradFn)
        // Shares storage: an in-place change through .data is seen by the parameter.
        torch.noGrad { _ = d.mul_(2) }
        XCTAssertEqual(w.toArray(as: Float.self), [2, 4])
        // Assignment replaces the values without touching requiresGrad or the grad.
        w.data = w.data - 0.5 * w.grad!
        XCTAssertEqual(w.toArray(as: Float.self), [0.5, 2.5])
        XCTAssertTrue(w.requiresGrad)
        XCTAssertEqual(w.grad!.toArray(as: Float.self), [3, 3])
        let outputs = torch.tensor([[0.1, 0.9], [0.8, 0.2]])
        let (_, predicted) = torch.max(outputs.data, 1)
        XCTAssertEqual(predicted.toArray(as: Int64.self), [1, 0])
    }

    func testReductionsTakeDimPositionallyAndByKeyword() {
        let x = torch.arange(6.0).reshape([2, 3])
        func same(_ a: Tensor, _ b: Tensor, _ what: String) {
            XCTAssertEqual(a.shape, b.shape, what)
            XCTAssertEqual(a.toArray(as: Double.self), b.toArray(as: Double.self), what)
        }
        same(x.sum(1), x.sum(dim: 1), "sum")
        same(x.sum(1, true), x.sum(dim: 1, keepdim: true), "sum keepdim")
        same(x.sum(1, keepdim: true), x.sum(dim: 1, keepdim: true), "sum keepdim label")
        same(x.sum([0, 1]), x.sum(dim: [0, 1]), "sum dims")
        same(torch.sum(x, 1), torch.sum(x, dim: 1), "torch.sum")
        same(torch.sum(x, 0, true), torch.sum(x, dim: 0, keepdim: true), "torch.sum keepdim")
        same(x.mean(0), x.mean(dim: 0), "mean")
        same(x.mean(0, true), x.mean(dim: 0, keepdim: true), "mean keepdim")
        same(torch.mean(x, 1), torch.mean(x, dim: 1), "torch.mean")
        same(torch.mean(x, 1, keepdim: true), torch.mean(x, dim: 1, keepdim: true), "torch.mean keepdim")
        same(x.max(1).values, x.max(dim: 1).values, "max")
        same(x.max(1, true).indices, x.max(dim: 1, keepdim: true).indices, "max keepdim")
        same(torch.max(x, 1).indices, torch.max(x, dim: 1).indices, "torch.max")
        same(x.min(0).values, x.min(dim: 0).values, "min")
        same(torch.min(x, 0, true).values, torch.min(x, dim: 0, keepdim: true).values, "torch.min")
        same(x.argmax(1), x.argmax(dim: 1), "argmax")
        same(x.argmax(1, true), x.argmax(dim: 1, keepdim: true), "argmax keepdim")
        same(torch.argmax(x, 1), torch.argmax(x, dim: 1), "torch.argmax")
        same(torch.argmin(x, 1), torch.argmin(x, dim: 1), "torch.argmin")
        same(x.softmax(1), x.softmax(dim: 1), "softmax")
        same(torch.softmax(x, 1), torch.softmax(x, dim: 1), "torch.softmax")
        same(F.softmax(x, 1), F.softmax(x, dim: 1), "F.softmax")
        same(x.logSoftmax(1), x.logSoftmax(dim: 1), "logSoftmax")
        same(torch.logSoftmax(x, 0), torch.logSoftmax(x, dim: 0), "torch.logSoftmax")
        same(F.logSoftmax(x, 1), F.logSoftmax(x, dim: 1), "F.logSoftmax")
        same(x.cumsum(1), x.cumsum(dim: 1), "cumsum")
        same(torch.cumsum(x, 0), torch.cumsum(x, dim: 0), "torch.cumsum")
        XCTAssertEqual(x.sum(1).toArray(as: Double.self), [3, 12])
        XCTAssertEqual(x.argmax(0).toArray(as: Int64.self), [1, 1, 1])
    }

    func testShapeOpsTakeDimPositionallyAndByKeyword() {
        let x = torch.arange(6.0).reshape([2, 3])
        XCTAssertEqual(torch.unsqueeze(x, dim: 1).shape, [2, 1, 3])
        XCTAssertEqual(torch.unsqueeze(x, 1).shape, [2, 1, 3])
        XCTAssertEqual(x.unsqueeze(dim: 0).shape, [1, 2, 3])
        XCTAssertEqual(x.unsqueeze(-1).shape, [2, 3, 1])
        let y = x.unsqueeze(1)
        XCTAssertEqual(torch.squeeze(y, dim: 1).shape, [2, 3])
        XCTAssertEqual(torch.squeeze(y, 1).shape, [2, 3])
        XCTAssertEqual(y.squeeze(dim: 1).shape, [2, 3])
        XCTAssertEqual(y.unsqueeze(0).squeeze([0, 2]).shape, [2, 3])
        XCTAssertEqual(torch.squeeze(y, [1]).shape, [2, 3])
        let z = torch.zeros(2, 3, 4, 5)
        XCTAssertEqual(z.flatten(1).shape, [2, 60])
        XCTAssertEqual(z.flatten(1, 2).shape, [2, 12, 5])
        XCTAssertEqual(z.flatten(startDim: 1).shape, [2, 60])
        XCTAssertEqual(torch.flatten(z, 1).shape, [2, 60])
        XCTAssertEqual(torch.flatten(z, startDim: 1).shape, [2, 60])
        XCTAssertEqual(x.transpose(0, 1).shape, [3, 2])
        XCTAssertEqual(x.transpose(dim0: 0, dim1: 1).shape, [3, 2])
        XCTAssertEqual(torch.transpose(x, dim0: 1, dim1: 0).shape, [3, 2])
        XCTAssertEqual(torch.cat([x, x], 1).shape, [2, 6])
        XCTAssertEqual(torch.cat([x, x], dim: 1).shape, [2, 6])
        XCTAssertEqual(torch.stack([x, x], 1).shape, [2, 2, 3])
        XCTAssertEqual(torch.stack([x, x], dim: 1).shape, [2, 2, 3])
        XCTAssertEqual(x.T.shape, [3, 2])
        XCTAssertEqual(x.mT.shape, [3, 2])
        XCTAssertTrue(x.isLeaf)
    }
}
