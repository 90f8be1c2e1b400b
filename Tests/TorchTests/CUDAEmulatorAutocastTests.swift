import XCTest
@testable import Torch

/// `torch.autocast(deviceType: "cuda")` and `torch.amp.GradScaler(device: "cuda")` on the CUDA host emulator:
/// PyTorch's CUDA op lists (which differ from the CPU's), CNN training steps under float16 and bfloat16
/// autocast matching the CPU's autocast, and a scaled float16 step skipped on a planted inf.
final class CUDAEmulatorAutocastTests: CUDAEmulatorTestCase {
    private let cuda = Device.cuda(0)

    func testCUDAListsApplyToCUDATensorsOnly() {
        let a = data([3, 4], seed: 1, on: cuda), b = data([4, 5], seed: 2, on: cuda), v = data([4], seed: 3, on: cuda)
        let h = a.half()
        let logits = data([4, 5], seed: 4, on: cuda), target = torch.tensor([0, 3, 1, 4]).to(cuda)
        torch.autocast(deviceType: "cuda") {
            XCTAssertEqual(torch.getAutocastDtype("cuda"), .float16)
            let expected: [(String, Tensor, DType)] = [
                ("mm", a.mm(b), .float16),
                ("matmul", a.matmul(b), .float16),
                ("mv (CUDA list only)", a.mv(v), .float16),
                ("einsum (CUDA list only)", torch.einsum("ij,jk->ik", a, b), .float16),
                ("linear", F.linear(a, b.t()), .float16),
                ("softmax of float32 (CUDA: float32)", F.softmax(logits, dim: 1), .float32),
                ("softmax of float16 (CUDA: float32)", F.softmax(logits.half(), dim: 1), .float32),
                ("exp of float16", h.exp(), .float32),
                ("sum of float16", h.sum(), .float32),
                ("pow of float16", h.pow(2.5), .float32),
                ("layer_norm of float16", F.layerNorm(h, [4]), .float32),
                ("relu keeps float16", F.relu(h), .float16),
                ("add keeps float16", h + h, .float16),
                ("cross_entropy of float16", F.crossEntropy(logits.half(), target), .float32),
                ("dot promotes", h[0].dot(v), .float32),
                ("float64 is left alone", a.double().mm(b.double()), .float64),
                ("CPU tensors are left alone", a.cpu().mm(b.cpu()), .float32),
            ]
            for (name, y, dtype) in expected { XCTAssertEqual(y.dtype, dtype, name) }
        }
        torch.autocast(deviceType: "cuda", dtype: .bfloat16) { XCTAssertEqual(a.mm(b).dtype, .bfloat16) }
        XCTAssertEqual(a.mm(b).dtype, .float32)
    }

    /// float16/bfloat16 products run as half GEMMs on the device (cublasGemmEx with float32 accumulation; the
    /// emulator rounds the same way) and match the CPU's float32 GEMM rounded to the half type.
    func testHalfPrecisionGEMMsMatchTheCPU() {
        for low in [DType.float16, .bfloat16] {
            let ulp = low == .float16 ? 1.0 / 1024 : 1.0 / 128
            assertSameOnBothDevices("\(low) mm, addmm, bmm, matmul with gradients", tol: 2 * ulp) { dev in
                let a = data([7, 13], seed: 51, on: dev).to(low).requiresGrad_()
                let b = data([13, 5], seed: 52, on: dev).to(low).requiresGrad_()
                let bias = data([5], seed: 53, on: dev).to(low)
                let x3 = data([3, 7, 13], seed: 54, on: dev).to(low), y3 = data([3, 13, 4], seed: 55, on: dev).to(low)
                let mm = a.mm(b), addmm = torch.addmm(bias, a, b.t().contiguous().t()), bmm = x3.bmm(y3)
                let batched = x3.matmul(b)
                (mm.float().sum() + addmm.float().pow(2).sum()).backward()
                return [mm, addmm, bmm, batched, a.grad!, b.grad!]
            }
        }
    }

    func testCNNStepsUnderAutocastMatchTheCPUsAutocast() {
        for low in [DType.float16, .bfloat16] {
            // One rounding of the low type (2⁻¹¹ or 2⁻⁸) may differ where the devices sum in another order.
            let tol = low == .float16 ? 4e-3 : 3e-2
            assertSameOnBothDevices("conv + BatchNorm + pooling net, 3 SGD steps under \(low) autocast", tol: tol) { dev in
                torch.manualSeed(41)
                let conv = nn.Conv2d(3, 6, 3, padding: 1), bn = nn.BatchNorm2d(6), fc = nn.Linear(6 * 4 * 4, 5)
                for m in [conv, bn, fc] as [nn.Module] { m.to(dev) }
                let params = conv.parameters() + bn.parameters() + fc.parameters()
                let opt = optim.SGD(params, lr: 0.05, momentum: 0.9)
                let x = data([4, 3, 8, 8], seed: 42, on: dev), y = torch.tensor([1, 4, 3, 0]).to(dev)
                var out: [Tensor] = []
                for _ in 0..<3 {
                    opt.zeroGrad()
                    let (logits, loss) = torch.autocast(deviceType: dev.type, dtype: low) { () -> (Tensor, Tensor) in
                        let h = F.maxPool2d(F.relu(bn(conv(x))), 2)
                        let logits = fc(F.adaptiveAvgPool2d(h, [4, 4]).flatten(1))
                        return (logits, F.crossEntropy(logits, y))
                    }
                    XCTAssertEqual(logits.dtype, low)
                    XCTAssertEqual(loss.dtype, .float32)
                    loss.backward()
                    opt.step()
                    out.append(loss.detach())
                }
                return out + [conv.weight.detach(), fc.weight.grad!, bn.runningVar!]
            }
        }
    }

    func testGradScalerSkipsAStepWithAnInfOnTheDevice() {
        let scaler = torch.amp.GradScaler(device: "cuda", initScale: 1024, growthInterval: 1)
        XCTAssertTrue(scaler.isEnabled())
        torch.manualSeed(5)
        let lin = nn.Linear(4, 2).to(cuda)
        let opt = optim.SGD(lin.parameters(), lr: 0.1)
        let x = data([3, 4], seed: 6, on: cuda)
        let before = lin.weight.detach().cpu()

        opt.zeroGrad()
        var loss = torch.autocast(deviceType: "cuda") { lin(x).float().pow(2).mean() }
        scaler.scale(loss * Double.infinity).backward()
        XCTAssertFalse(scaler.step(opt), "a step with an inf gradient is skipped")
        scaler.update()
        XCTAssertEqual(scaler.getScale(), 512)
        XCTAssertEqual(lin.weight.detach().cpu().toArray(as: Float.self), before.toArray(as: Float.self))

        // The reference: the same float16 forward without scaling.
        opt.zeroGrad()
        torch.autocast(deviceType: "cuda") { lin(x).float().pow(2).mean() }.backward()
        let reference = lin.weight.grad!.cpu()

        opt.zeroGrad()
        loss = torch.autocast(deviceType: "cuda") { lin(x).float().pow(2).mean() }
        scaler.scale(loss).backward()
        XCTAssertEqual(lin.weight.grad?.device, cuda)
        scaler.unscale_(opt)
        XCTAssertLessThan((lin.weight.grad!.cpu() - reference).abs().max().item(), 1e-6)
        XCTAssertTrue(scaler.step(opt))
        scaler.update()
        XCTAssertEqual(scaler.getScale(), 1024, "grows after growthInterval clean steps")
        XCTAssertNotEqual(lin.weight.detach().cpu().toArray(as: Float.self), before.toArray(as: Float.self))
    }
}
