import XCTest
@testable import Torch

/// Index-based ops, joins and the layers built on them on the CUDA host emulator, against the CPU: each case
/// is one program run once per device, with gradients where the op is differentiable.
final class CUDAEmulatorIndexingTests: CUDAEmulatorTestCase {

    func testAdvancedIndexingReadsAndWrites() {
        assertSameOnBothDevices("x[idx], x[:, idx], x[i, j], x[mask] and their gradients") { dev in
            let x = data([5, 6, 4], seed: 1, on: dev, requiresGrad: true)
            let idx = torch.tensor([4, -1, 0, 2, 2]).to(dev)
            let rows = x[idx]
            let cols = x[TensorIndex.all, torch.tensor([[1, 5], [0, 0]])]   // a CPU index for a GPU tensor moves along
            let pairs = x[torch.tensor([0, 3, 4]).to(dev), torch.tensor([5, 0, 2]).to(dev)]
            let picked = x[x.detach() .> 0.5]
            let loss = rows.sum() + (cols * cols).sum() + pairs.mean() + picked.exp().sum()
            loss.backward()
            return [rows, cols, pairs, picked, x.grad!]
        }
        assertSameOnBothDevices("x[idx] = v, accumulate, masked writes, take and nonzero") { dev in
            let x = data([6, 3], seed: 2, on: dev)
            x[torch.tensor([1, -2]).to(dev)] = torch.tensor([[1.0, 2.0, 3.0]]).to(dev)
            x.indexPut_([torch.tensor([0, 0, 5]).to(dev)], torch.ones(3, 3).to(dev), accumulate: true)
            x[x .< -0.5] = torch.tensor(7.0)
            let taken = x.take(torch.tensor([[0, 17], [-1, 4]]).to(dev))
            let nz = (x .> 0.3).nonzero()
            let ints = torch.arange(0, 12).reshape(3, 4).to(dev)
            ints[torch.tensor([2, 0]).to(dev), torch.tensor([1, 3]).to(dev)] = torch.tensor([-5, -6]).to(dev)
            return [x, taken, nz, ints]
        }
    }

    func testIndexSelectAddGatherScatterAndMaskedFill() {
        assertSameOnBothDevices("indexSelect / indexAdd_ / gather / scatter / scatterAdd / maskedFill with gradients") { dev in
            let x = data([4, 7], seed: 3, on: dev, requiresGrad: true)
            let sel = x.indexSelect(1, torch.tensor([6, 0, 6, 3]).to(dev))
            let idx = torch.tensor([[0, 1, 1], [3, 3, 0]]).to(dev)
            let gathered = x.gather(1, idx)
            let scattered = torch.zeros(4, 7).to(dev).scatter(1, idx, gathered * 2)
            let added = torch.zeros(4, 7).to(dev).scatterAdd(1, idx, torch.ones(2, 3).to(dev))
            let acc = torch.zeros(5, 7).to(dev).indexAdd_(0, torch.tensor([4, 1, 4, 4]).to(dev), x, alpha: 0.5)
            let filled = x.maskedFill(x.detach() .> 0, -1.5)
            (sel.pow(2).sum() + gathered.sum() * 3 + filled.sum() + acc.sum()).backward()
            return [sel, gathered, scattered, added, acc, filled, x.grad!]
        }
        assertSameOnBothDevices("index writes in the narrow and integer types (compare-and-swap atomics)", tol: 1e-3) { dev in
            let positions = torch.tensor([0, 2, 2, 1, 2]).to(dev)
            let halves = torch.zeros(4, 2, dtype: .float16).to(dev).indexAdd_(0, positions, torch.full([5, 2], 0.25).to(dev))
            let brains = torch.zeros(4, 2, dtype: .bfloat16).to(dev).indexAdd_(0, positions, torch.full([5, 2], 1.5).to(dev))
            let bytes = torch.zeros(4, dtype: .uint8).to(dev).indexAdd_(0, positions, torch.full([5], 3, dtype: .uint8).to(dev))
            let longs = torch.zeros(3, dtype: .int64).to(dev).scatterAdd(0, torch.tensor([2, 2, 0]).to(dev), torch.tensor([1, 2, 3]).to(dev))
            let flags = torch.zeros(3, dtype: .bool).to(dev).indexPut_([torch.tensor([1]).to(dev)], torch.tensor(true), accumulate: true)
            return [halves, brains, bytes, longs, flags]
        }
    }

    func testCatStackAndEmbedding() {
        assertSameOnBothDevices("cat / stack / split gradients") { dev in
            let a = data([2, 3], seed: 4, on: dev, requiresGrad: true), b = data([2, 5], seed: 5, on: dev, requiresGrad: true)
            let c = torch.cat([a, b, a], dim: 1)
            let s = torch.stack([a, a * 2], dim: 1)
            let parts = c.split(4, dim: 1)
            let e = torch.einsum("ij,ik->jk", a, b), f = torch.einsum("bij->ji", s)
            (parts[0].sum() * 2 + parts[2].pow(2).sum() + s.sum() + e.pow(2).sum() + f.sum()).backward()
            return [c, s, e, f, a.grad!, b.grad!]
        }
        assertSameOnBothDevices("Embedding with padding_idx and scale_grad_by_freq, forward and backward") { dev in
            torch.manualSeed(6)
            let emb = nn.Embedding(10, 4, paddingIdx: 2, scaleGradByFreq: true)
            emb.to(dev)
            let tokens = torch.tensor([[1, 2, 4, 4], [9, 2, 1, 1]]).to(dev)
            let y = emb(tokens)
            (y * y).sum().backward()
            return [y, emb.weight.grad!]
        }
    }

    func testScansNormsLayerNormAndOptimizers() {
        assertSameOnBothDevices("cumsum / cumprod (long rows split over threads, strided lines) and var / std / norm", tol: 1e-5) { dev in
            let x = data([3, 700], seed: 7, on: dev, requiresGrad: true)
            let rows = x.cumsum(dim: 1), cols = (x * 0.1 + 1).cumprod(dim: 0)
            let ints = torch.arange(0, 12, dtype: .int32).reshape(3, 4).to(dev).cumsum(dim: 0)
            let stats = [x.var(dim: 1), x.std(), x.norm(), x.norm(p: 1, dim: 0), x.norm(p: .infinity)]
            (rows.sum() + cols.sum() + stats[0].sum() + stats[2]).backward()
            return [rows, cols, ints, x.grad!] + stats
        }
        assertSameOnBothDevices("LayerNorm and GroupNorm with gradients", tol: 1e-5) { dev in
            let x = data([4, 6, 5], seed: 8, on: dev, requiresGrad: true)
            torch.manualSeed(9)
            let ln = nn.LayerNorm([6, 5]), gn = nn.GroupNorm(3, 6)
            ln.to(dev); gn.to(dev)
            let y = ln(x), z = gn(x)
            (y * y.detach().sin()).sum().add(z.pow(3).sum()).backward()
            return [y, z, x.grad!, ln.weight!.grad!, ln.bias!.grad!]
        }
        for name in ["RMSprop centered with momentum", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam", "SGD with clipGradNorm_"] {
            assertSameOnBothDevices("\(name): three steps", tol: 1e-5) { dev in
                torch.manualSeed(10)
                let model = nn.Linear(5, 3)
                model.to(dev)
                let params = model.parameters()
                let opt: optim.Optimizer
                switch name {
                case "Adagrad": opt = optim.Adagrad(params, lr: 0.1, weightDecay: 0.01)
                case "Adadelta": opt = optim.Adadelta(params, lr: 1, weightDecay: 0.01)
                case "Adamax": opt = optim.Adamax(params, lr: 0.01)
                case "NAdam": opt = optim.NAdam(params, lr: 0.01, weightDecay: 0.01)
                case "RAdam": opt = optim.RAdam(params, lr: 0.01)
                case "SGD with clipGradNorm_": opt = optim.SGD(params, lr: 0.1)
                default: opt = optim.RMSprop(params, lr: 0.01, weightDecay: 0.01, momentum: 0.9, centered: true)
                }
                let x = data([8, 5], seed: 11, on: dev)
                var norms: [Tensor] = []
                for _ in 0..<3 {
                    opt.zeroGrad()
                    model(x).pow(2).mean().backward()
                    if name.hasPrefix("SGD") { norms.append(nn.utils.clipGradNorm_(params, maxNorm: 0.1)) }
                    opt.step()
                }
                return params.map { $0.detach() } + norms
            }
        }
    }

    func testDeviceRandomNumbersAndDropout() {
        let cuda = Device.cuda(0)
        torch.manualSeed(12)
        let u = torch.rand(20_000, device: cuda), z = torch.randn([20_000], dtype: .float64, device: cuda)
        XCTAssertEqual(u.device, cuda)
        XCTAssertEqual(z.dtype, .float64)
        XCTAssertGreaterThanOrEqual(u.min().item(), 0)
        XCTAssertLessThan(u.max().item(), 1)
        XCTAssertEqual(u.mean().item(), 0.5, accuracy: 0.01)
        XCTAssertEqual(z.mean().item(), 0, accuracy: 0.03)
        XCTAssertEqual(z.std().item(), 1, accuracy: 0.03)
        // Seeding repeats the stream; consecutive draws differ.
        torch.manualSeed(12)
        XCTAssertEqual(torch.rand(20_000, device: cuda).cpu().toArray(as: Float.self), u.cpu().toArray(as: Float.self))
        XCTAssertNotEqual(torch.rand(8, device: cuda).cpu().toArray(as: Float.self), torch.rand(8, device: cuda).cpu().toArray(as: Float.self))
        torch.cuda.manualSeed(5)
        XCTAssertEqual(torch.cuda.initialSeed(), 5)

        let x = torch.ones(200, 100, device: cuda).requiresGrad_()
        let y = F.dropout(x, p: 0.3)
        let kept = (y .!= 0).to(.float32)
        XCTAssertEqual(kept.mean().item(), 0.7, accuracy: 0.01)
        let keptValues = y.detach().maskedSelect(y.detach() .!= 0)
        XCTAssertEqual(keptValues.min().item(), 1 / 0.7, accuracy: 1e-5)
        XCTAssertEqual(keptValues.max().item(), 1 / 0.7, accuracy: 1e-5)
        y.sum().backward()
        XCTAssertEqual(x.grad!.cpu().toArray(as: Float.self), y.detach().cpu().toArray(as: Float.self))
        let channels = F.dropout2d(torch.ones(4, 50, 3, 3, device: cuda), p: 0.5)
        let perChannel = channels.amax(dim: [2, 3]) .== channels.amin(dim: [2, 3])
        XCTAssertTrue(perChannel.all().item() != 0, "dropout2d drops whole channels")
    }

    func testRecurrentLayersMatchTheCPU() {
        for (kind, bidirectional) in [("LSTM", true), ("GRU", false), ("RNN", true)] {
            assertSameOnBothDevices("\(kind) two layers, batch_first, bidirectional \(bidirectional), with gradients", tol: 1e-5) { dev in
                torch.manualSeed(13)
                let output: Tensor, hN: Tensor
                let x = data([3, 5, 4], seed: 14, on: dev, requiresGrad: true)
                let module: nn.Module
                switch kind {
                case "LSTM":
                    let m = nn.LSTM(4, 6, numLayers: 2, batchFirst: true, bidirectional: bidirectional)
                    m.to(dev)
                    let (o, (h, _)) = m(x, nil)
                    (output, hN) = (o, h)
                    module = m
                case "GRU":
                    let m = nn.GRU(4, 6, numLayers: 2, batchFirst: true, bidirectional: bidirectional)
                    m.to(dev)
                    (output, hN) = m(x, nil)
                    module = m
                default:
                    let m = nn.RNN(4, 6, numLayers: 2, batchFirst: true, bidirectional: bidirectional)
                    m.to(dev)
                    (output, hN) = m(x, nil)
                    module = m
                }
                (output.pow(2).sum() + hN.sum()).backward()
                return [output, hN, x.grad!] + module.parameters().map { $0.grad! }
            }
        }
    }
}
