import Torch

/// Issue 26's CNN ops around convolutions and pooling, each program run on the GPU and on the CPU by
/// `checkOnBoth` (values and gradients, float32 and float64, odd shapes, a transposed input in each family):
/// `F.interpolate` / `nn.Upsample` (the `resample` kernels), `F.pad` and the pad modules, pixel (un)shuffle,
/// fold/unfold, `F.gridSample` / `F.affineGrid`, local response norm, max unpooling, adaptive, LP and 3-D
/// pooling, batch, group and instance norm. The emulator tests (CUDAEmulatorCNNOpsTests) run the same kinds of
/// programs without a GPU.
func cnnOpChecks(_ checkOnBoth: (_ name: String, _ tol: Double, _ program: (Device) -> [Tensor]) -> Void) {
    /// A fixed random `dt` tensor (made on the CPU) on `device` that requires grad.
    func leaf(_ shape: [Int], _ seed: UInt64, _ dt: DType, _ device: Device) -> Tensor {
        torch.manualSeed(seed)
        return torch.randn(shape).to(dt).to(device).requiresGrad_()
    }
    /// A scalar loss weighing every element of `y` differently.
    func loss(_ y: Tensor, _ seed: UInt64) -> Tensor {
        torch.manualSeed(seed)
        return (y * torch.rand(y.shape).to(y.dtype).to(y.device)).sum()
    }
    for dt in [DType.float32, .float64] {
        let tol = dt == .float32 ? 1e-4 : 1e-10
        checkOnBoth("interpolate: nearest, nearest-exact, linear, bilinear, bicubic, trilinear, area, antialias, Upsample \(dt.name)", tol) { dev in
            let x1 = leaf([4, 5, 37], 101, dt, dev), x2 = leaf([3, 4, 29, 33], 102, dt, dev), x3 = leaf([2, 3, 7, 9, 11], 103, dt, dev)
            let ys = [
                F.interpolate(x1, scaleFactor: 2), F.interpolate(x1, size: 50, mode: .linear, alignCorners: true),
                F.interpolate(x2, size: [40, 17]), F.interpolate(x2, scaleFactor: 1.7, mode: .nearestExact),
                F.interpolate(x2.transpose(2, 3), scaleFactor: 1.5, mode: .bilinear),
                F.interpolate(x2, size: [61, 20], mode: .bilinear, alignCorners: true),
                F.interpolate(x2, size: [45, 50], mode: .bicubic), F.interpolate(x2, scaleFactor: 2, mode: .bicubic, alignCorners: true),
                F.interpolate(x2, size: [10, 12], mode: .bilinear, antialias: true), F.interpolate(x2, size: [8, 9], mode: .area),
                F.interpolate(x3, scaleFactor: [2.0, 1.5, 0.5], mode: .trilinear),
                F.interpolate(x3, size: [5, 13, 4], mode: .trilinear, alignCorners: true),
                nn.Upsample(scaleFactor: 2, mode: .bilinear, alignCorners: true)(x2),
            ]
            var total = loss(ys[0], 104)
            for (i, y) in ys.enumerated().dropFirst() { total = total + loss(y, 104 + UInt64(i)) }
            total.backward()
            return ys + [x1.grad!, x2.grad!, x3.grad!]
        }
        checkOnBoth("F.pad constant/reflect/replicate/circular 1-D, 2-D, 3-D and pad modules \(dt.name)", tol) { dev in
            let x1 = leaf([4, 3, 41], 111, dt, dev), x2 = leaf([2, 5, 17, 23], 112, dt, dev), x3 = leaf([2, 2, 6, 7, 9], 113, dt, dev)
            var ys: [Tensor] = []
            for mode in [F.PadMode.constant, .reflect, .replicate, .circular] {
                ys += [F.pad(x1, [3, 5], mode: mode), F.pad(x2.transpose(2, 3), [2, 1, 4, 3], mode: mode),
                       F.pad(x3, [1, 2, 3, 1, 2, 0], mode: mode)]
            }
            ys += [F.pad(x2, [-2, 3, 1, -4], value: 0.5), nn.ReflectionPad2d([3, 1, 2, 2])(x2), nn.ReplicationPad3d(2)(x3),
                   nn.CircularPad1d(4)(x1)]
            var total = loss(ys[0], 114)
            for (i, y) in ys.enumerated().dropFirst() { total = total + loss(y, 114 + UInt64(i)) }
            total.backward()
            return ys + [x1.grad!, x2.grad!, x3.grad!]
        }
        checkOnBoth("pixel shuffle / unshuffle, unfold / fold \(dt.name)", tol) { dev in
            let x = leaf([4, 27, 13, 11], 121, dt, dev), z = leaf([2, 6, 26, 18], 122, dt, dev)
            let up = F.pixelShuffle(x, 3), down = F.pixelUnshuffle(z.transpose(2, 3), 2)
            let cols = F.unfold(z, kernelSize: [3, 2], dilation: [2, 1], padding: 1, stride: [1, 2])
            let back = F.fold(cols, outputSize: [26, 18], kernelSize: [3, 2], dilation: [2, 1], padding: 1, stride: [1, 2])
            (loss(up, 123) + loss(down, 124) + loss(cols, 125) + loss(back, 126)).backward()
            return [up, down, cols, back, x.grad!, z.grad!]
        }
        // theta's gradient sums the bicubic weights' derivatives over thousands of locations: float32 sums in
        // another order differ by a few 1e-4.
        let gridTol = dt == .float32 ? 1e-3 : tol
        for mode in [F.GridSampleMode.bilinear, .nearest, .bicubic] {
            checkOnBoth("gridSample \(mode.rawValue), every padding, alignCorners both ways, affineGrid \(dt.name)", gridTol) { dev in
                torch.manualSeed(131)
                let theta = (torch.eye(2, 3).unsqueeze(0) + torch.randn(3, 2, 3) * 0.3).to(dt).to(dev).requiresGrad_()
                let theta3 = (torch.eye(3, 4).unsqueeze(0) + torch.randn(2, 3, 4) * 0.3).to(dt).to(dev).requiresGrad_()
                let x = leaf([3, 4, 19, 23], 132, dt, dev), v = leaf([2, 3, 5, 6, 7], 133, dt, dev)
                var ys: [Tensor] = []
                for padding in [F.GridSamplePadding.zeros, .border, .reflection] {
                    for align in [false, true] {
                        let grid = F.affineGrid(theta * 1.3, size: [3, 4, 15, 17], alignCorners: align)
                        ys.append(F.gridSample(x.transpose(2, 3), grid, mode: mode, paddingMode: padding, alignCorners: align))
                    }
                }
                if mode != .bicubic {
                    let grid3 = F.affineGrid(theta3, size: [2, 3, 4, 6, 5], alignCorners: false)
                    ys.append(F.gridSample(v, grid3, mode: mode, paddingMode: .border))
                }
                var total = loss(ys[0], 134)
                for (i, y) in ys.enumerated().dropFirst() { total = total + loss(y, 134 + UInt64(i)) }
                total.backward()
                return ys + [x.grad!] + (mode == .bicubic ? [] : [v.grad!]) + (mode == .nearest ? [] : [theta.grad!])
                    + (mode == .bilinear ? [theta3.grad!] : [])
            }
        }
        checkOnBoth("LocalResponseNorm, MaxUnpool2d, adaptive 1/2/3-D, LPPool, 3-D pooling \(dt.name)", tol) { dev in
            let x = leaf([4, 7, 18, 15], 141, dt, dev), x1 = leaf([3, 5, 29], 142, dt, dev), x3 = leaf([2, 3, 9, 10, 11], 143, dt, dev)
            let (p, idx) = F.maxPoolWithIndices(x, dims: 2, kernelSize: 2)
            let ys = [
                nn.LocalResponseNorm(3, alpha: 0.1, beta: 0.75, k: 2)(x.transpose(2, 3)), F.localResponseNorm(x3, size: 4),
                nn.MaxUnpool2d(2)(p, idx, outputSize: [18, 15]),
                nn.AdaptiveAvgPool1d(6)(x1), nn.AdaptiveMaxPool1d(7)(x1), nn.AdaptiveAvgPool2d([5, 4])(x), nn.AdaptiveMaxPool2d(3)(x),
                nn.AdaptiveAvgPool3d([2, 3, 4])(x3), nn.AdaptiveMaxPool3d([4, 3, 2])(x3),
                nn.LPPool2d(2, 3, stride: 2)(x), F.lpPool1d(x1, 3, 2),
                nn.AvgPool3d(3, stride: [1, 2, 2], padding: 1)(x3), nn.MaxPool3d(3, stride: 2, padding: 1)(x3),
            ]
            var total = loss(ys[0], 144)
            for (i, y) in ys.enumerated().dropFirst() { total = total + loss(y, 144 + UInt64(i)) }
            total.backward()
            return ys + [idx, x.grad!, x1.grad!, x3.grad!]
        }
        checkOnBoth("BatchNorm1d/2d/3d train + eval (momentum 0.1 and nil), GroupNorm, InstanceNorm1d/2d/3d \(dt.name)", tol) { dev in
            torch.manualSeed(151)
            let bn1 = nn.BatchNorm1d(6, dtype: dt), bn2 = nn.BatchNorm2d(6, momentum: nil, dtype: dt)
            let bn3 = nn.BatchNorm3d(6, affine: false, dtype: dt), gn = nn.GroupNorm(3, 6, dtype: dt)
            let in1 = nn.InstanceNorm1d(6, affine: true, dtype: dt), in2 = nn.InstanceNorm2d(6, trackRunningStats: true, dtype: dt)
            let in3 = nn.InstanceNorm3d(6, dtype: dt)
            for m in [bn1, bn2, bn3, gn, in1, in2, in3] as [nn.Module] { m.to(dev) }
            let x1 = leaf([16, 6, 9], 152, dt, dev), x2 = leaf([8, 6, 11, 13], 153, dt, dev), x3 = leaf([4, 6, 3, 5, 7], 154, dt, dev)
            var ys: [Tensor] = []
            for _ in 0..<2 { ys += [bn1(x1), bn2(x2.transpose(2, 3)), bn3(x3)] }
            ys += [gn(x2), in1(x1), in2(x2.transpose(2, 3)), in3(x3)]
            var total = loss(ys[0], 155)
            for (i, y) in ys.enumerated().dropFirst() { total = total + loss(y, 155 + UInt64(i)) }
            total.backward()
            for m in [bn1, bn2, bn3, in2] as [nn.Module] { m.eval() }
            let evals = torch.noGrad { [bn1(x1), bn2(x2), bn3(x3), in2(x2)] }
            return ys + evals + [x1.grad!, x2.grad!, x3.grad!, bn1.weight!.grad!, bn2.bias!.grad!, gn.weight!.grad!,
                                 in1.weight!.grad!, bn1.runningMean!, bn2.runningVar!, bn3.runningMean!, in2.runningVar!]
        }
    }
}
