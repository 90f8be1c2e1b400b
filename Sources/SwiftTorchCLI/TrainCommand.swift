import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif
import Torch
import TorchVision

enum OptimizerName: String, ExpressibleByArgument, CaseIterable {
    case sgd, adam, adamw, rmsprop
}

enum SchedulerName: String, ExpressibleByArgument, CaseIterable {
    case step, cosine, onecycle, none
}

/// `--amp`: mixed precision as PyTorch's `torch.autocast` runs it on the training device.
enum AMPMode: String, ExpressibleByArgument, CaseIterable {
    case none, bf16, fp16

    /// The autocast dtype, or nil for full precision.
    var dtype: DType? {
        switch self {
        case .none: return nil
        case .bf16: return .bfloat16
        case .fp16: return .float16
        }
    }
}

struct Train: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Train a model; report loss and test accuracy after each epoch.",
        discussion: """
            Shows a progress bar per epoch (a plain line every 10 % when standard error is not a terminal), \
            logs the model graph and Loss/train, Loss/test, Accuracy/test and LR to TensorBoard with --logdir, writes the whole \
            training state (model, optimizer, scheduler, random generator, epoch) to --checkpoint after every \
            epoch (atomically), and continues a run bit for bit with --resume. The last line printed is \
            `final test accuracy <acc> in <seconds> s`.
            """)

    @OptionGroup var data: DataOptions
    @OptionGroup var net: ModelOptions

    @Option(help: "Number of epochs in all (positive; default 20 on digits, 5 otherwise). With --resume, training continues up to this epoch.")
    var epochs: Int?

    @Option(help: "Learning rate (positive; default 0.1 for sgd, 0.001 otherwise).")
    var lr: Double?

    @Option(help: "Optimizer.")
    var optimizer: OptimizerName = .sgd

    @Option(help: "Momentum of sgd and rmsprop (non-negative).")
    var momentum: Double = 0.5

    @Option(help: "Weight decay (non-negative; default 0.01 for adamw, 0 otherwise).")
    var weightDecay: Double?

    @Option(help: "Learning-rate schedule: step (×0.1 every --step-size epochs), cosine (to 0 over the epochs), onecycle (per batch, peak --lr), none.")
    var scheduler: SchedulerName = .step

    @Option(help: "Epochs between learning-rate drops of the step schedule (positive).")
    var stepSize: Int = 5

    @Option(help: "Random seed (weights, shuffling).")
    var seed: UInt64 = 0

    @Option(help: ArgumentHelp("Write TensorBoard event files to this folder (created if needed).", valueName: "folder"))
    var logdir: String?

    @Option(help: ArgumentHelp("Save the training state here after every epoch (a torch.save file; the folder must exist).", valueName: "path"))
    var checkpoint: String?

    @Option(help: ArgumentHelp("Continue the run saved in this checkpoint (same options; checkpoints keep going to --checkpoint, default this file).", valueName: "path"))
    var resume: String?

    @Option(help: ArgumentHelp("Save the trained model's state dict here at the end (a PyTorch .pt zip file; the folder must exist).", valueName: "path"))
    var save: String?

    @Option(help: ArgumentHelp("Augment the training batches: crop (a random crop of the image padded by an eighth of its side, black: torchvision's RandomCrop(size, padding)), flip (a horizontal flip half the time: RandomHorizontalFlip()), or crop,flip. The test split is never augmented.",
                               valueName: "steps"))
    var augment: String?

    /// `--augment`'s steps in application order (crop before flip), or nil without the option.
    var augmentSteps: [String]? {
        guard let augment else { return nil }
        let steps = Set(augment.lowercased().split(separator: ",").map { $0.trimmingWhitespace() })
        return ["crop", "flip"].filter(steps.contains)
    }

    @Option(help: "Where to train: auto (CUDA where a GPU is usable, else the CPU), cpu, cuda or cuda:N. With --distributed, auto and cuda give each rank cuda:(its rank on the node % GPU count).")
    var device: String = "auto"

    @Option(help: "Mixed precision: none, bf16 (forward passes under bfloat16 autocast) or fp16 (float16 autocast, the loss scaled by a GradScaler), on the CPU or CUDA.")
    var amp: AMPMode = .none

    @Flag(help: "Print the model summary (torchsummary's table) before training.")
    var summary = false

    @Flag(help: "Data-parallel training on MPI ranks: run as `mpirun -np N swifttorch train --distributed ...`. Each rank trains on its DistributedSampler share of every epoch, gradients are averaged over the ranks after backward, and rank 0 alone prints, logs and writes files.")
    var distributed = false

    func validate() throws {
        if let epochs, epochs <= 0 { throw ValidationError("--epochs must be a positive integer (got \(epochs))") }
        if let lr, !(lr > 0 && lr.isFinite) { throw ValidationError("--lr must be a positive number (got \(lr))") }
        guard momentum >= 0 && momentum.isFinite else { throw ValidationError("--momentum must be non-negative (got \(momentum))") }
        if let wd = weightDecay, !(wd >= 0 && wd.isFinite) { throw ValidationError("--weight-decay must be non-negative (got \(wd))") }
        guard stepSize > 0 else { throw ValidationError("--step-size must be a positive integer (got \(stepSize))") }
        if let augment {
            let steps = augment.lowercased().split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingWhitespace() }
            guard !steps.isEmpty, steps.allSatisfy({ $0 == "crop" || $0 == "flip" }) else {
                throw ValidationError("--augment must be crop, flip or crop,flip (got '\(augment)')")
            }
        }
        if let resume, !FileManager.default.fileExists(atPath: resume) {
            throw ValidationError("--resume '\(resume)': no such file")
        }
    }

    var effectiveLR: Double { lr ?? (optimizer == .sgd ? 0.1 : 1e-3) }
    var effectiveWeightDecay: Double { weightDecay ?? (optimizer == .adamw ? 0.01 : 0) }
    var defaultHidden: [Int] { data.dataset == .digits ? [128, 64] : [300, 100] }

    mutating func run() throws {
        // One line per epoch must reach a log file as it is printed, not when the buffer fills (hours later).
        setvbuf(stdout, nil, _IOLBF, 0)
        // Everything that can be checked before training is: destinations first.
        let checkpointPath = checkpoint ?? resume
        if let checkpointPath { try checkWritable(checkpointPath, option: checkpoint != nil ? "--checkpoint" : "--resume") }
        if let save { try checkWritable(save, option: "--save") }
        let resumed = try resume.map(TrainingCheckpoint.load)

        data.applyThreads()
        torch.manualSeed(seed)
        let kind = ModelKind(net.model)!
        let config = RunConfig(model: kind.name, dataset: data.dataset.description,
                               hidden: kind == .mlp ? (net.hidden.map { try! hiddenSizes($0) } ?? defaultHidden).map(String.init).joined(separator: ",") : "",
                               optimizer: optimizer.rawValue, scheduler: scheduler.rawValue, lr: effectiveLR, momentum: momentum,
                               weightDecay: effectiveWeightDecay, batchSize: data.batchSize, seed: seed, augment: augmentSteps?.joined(separator: ",") ?? "")
        if let resumed, resumed.config != config {
            throw CLIError.badCheckpoint(path: resume!, reason: "was trained with other options; pass "
                + config.differences(from: resumed.config).joined(separator: ", "))
        }
        let nEpochs = epochs ?? (data.dataset == .digits ? 20 : 5)
        if let resumed, resumed.epoch >= nEpochs {
            throw ValidationError("--resume '\(resume!)' has already trained \(resumed.epoch) epochs; ask for more with --epochs")
        }

        if distributed {
            try dist.initProcessGroup(backend: .mpi)
            // Only rank 0 prints: the others' standard output goes nowhere (their errors still show).
            if dist.getRank() != 0 { freopen("/dev/null", "w", stdout) }
        }
        let split = try loadData(data)
        let model = makeModel(kind, hidden: net.hidden.map { try! hiddenSizes($0) }, imageShape: split.imageShape,
                              classes: split.classes, defaultHidden: defaultHidden)
        print("dataset \(data.dataset): \(split.trainX.size(0)) train / \(split.testX.size(0)) test images of \(split.imageShape.map(String.init).joined(separator: "×")), \(split.classes) classes")
        print("model \(kind.name): \(model.adaptation)")
        if summary {
            Torch.summary(model.module, inputSize: model.inputShape)
        } else {
            print(model.module)
        }

        let trainSet = TensorDataset(split.trainX, split.trainY)
        let sampler = distributed ? DistributedSampler(trainSet, seed: seed) : nil
        let loader = sampler.map { DataLoader(trainSet, batchSize: data.batchSize, sampler: $0) }
            ?? DataLoader(trainSet, batchSize: data.batchSize, shuffle: true)
        var target = try resolveDevice(device)
        if distributed, target != .cpu, !device.hasPrefix("cuda:") {
            // One GPU per rank, as torchrun scripts pick it: the rank on this node modulo the GPUs it has.
            target = .cuda(try dist.getNodeLocalRank(fallbackRank: dist.getRank()) % torch.cuda.deviceCount())
            torch.cuda.setDevice(target)
        }
        model.module.to(target)
        if target != .cpu { print("device \(target): \(torch.cuda.getDeviceName(torch.cuda.currentDevice()))") }
        let opt = makeOptimizer(model.module.parameters())
        let sched = makeScheduler(opt, epochs: nEpochs, stepsPerEpoch: loader.count)
        var startEpoch = 1
        var history: [[String: Double]] = []
        // float16 gradients underflow without loss scaling; bfloat16 has float32's range and needs none.
        let scaler = amp == .fp16 ? torch.amp.GradScaler(device: target.type) : nil
        if let resumed {
            try model.module.loadStateDict(resumed.model)
            try opt.loadStateDict(resumed.optimizer)
            if let s = resumed.scheduler { try sched?.loadStateDict(s) }
            if let s = resumed.scaler, let scaler { try scaler.loadStateDict(s) }
            try torch.setRNGState(resumed.rngState)
            startEpoch = resumed.epoch + 1
            history = resumed.history
            print("resumed from '\(resume!)' after epoch \(resumed.epoch)")
        }
        var trainer = Trainer(model: model, optimizer: opt, scheduler: sched, perBatchScheduler: scheduler == .onecycle)
        trainer.device = target
        trainer.autocastDtype = amp.dtype
        trainer.scaler = scaler
        if let steps = augmentSteps { trainer.augmentation = trainAugmentation(split, steps: steps) }
        if distributed {
            // Every rank starts from rank 0's weights and buffers, and averages the gradients of each step.
            for t in model.module.parameters() + model.module.buffers() { try dist.broadcast(t, src: 0) }
            trainer.isMainProcess = dist.getRank() == 0
            trainer.afterBackward = { module in
                do {
                    for p in module.parameters() { if let g = p.grad { try dist.allReduce(g, op: .avg) } }
                } catch {
                    fputs("Error: rank \(dist.getRank()): \(error)\n", stderr)
                    Glibc.exit(1)
                }
            }
        }
        let writer = trainer.isMainProcess ? try logdir.map { try SummaryWriter(logDir: $0) } : nil
        if let writer, startEpoch == 1 { writer.addGraph(model.module, model.adapt(split.trainX[0..<1])) }

        let start = Date()
        var accuracy = history.last?["test_accuracy"] ?? 0
        for epoch in startEpoch...nEpochs {
            let t0 = Date()
            sampler?.setEpoch(epoch)
            let bar = ProgressBar(loader, description: "epoch \(epoch)/\(nEpochs)")
            var trainLoss = trainer.trainEpoch(bar)
            if distributed {
                let mean = torch.tensor([trainLoss], dtype: .float64)
                try dist.allReduce(mean, op: .avg)
                trainLoss = mean.item()
            }
            if scheduler != .onecycle { sched?.step() }
            let (testLoss, acc) = trainer.evaluate(split.testX, split.testY, batchSize: Swift.max(data.batchSize, 256))
            accuracy = acc
            let lrNow = opt.paramGroups[0].lr
            history.append(["train_loss": trainLoss, "test_loss": testLoss, "test_accuracy": acc, "lr": lrNow])
            print(String(cFormat: "epoch %2d/%d  loss %.4f  test loss %.4f  test accuracy %.4f  lr %.4g  (%.2f s)", epoch, nEpochs,
                         trainLoss, testLoss, acc, lrNow, Date().timeIntervalSince(t0)))
            if let writer {
                writer.addScalar("Loss/train", trainLoss, epoch)
                writer.addScalar("Loss/test", testLoss, epoch)
                writer.addScalar("Accuracy/test", acc, epoch)
                writer.addScalar("LR", lrNow, epoch)
                try writer.flush()
            }
            if let checkpointPath, trainer.isMainProcess {
                try TrainingCheckpoint(epoch: epoch, config: config, model: TrainingCheckpoint.modelValue(model.module),
                                       optimizer: opt.stateDict(), scheduler: sched?.stateDict(), scaler: scaler?.stateDict(),
                                       rngState: torch.getRNGState(), history: history).save(checkpointPath)
            }
        }
        try writer?.close()
        if let save, trainer.isMainProcess {
            try torch.save(model.module.stateDict(), save)
            print("saved the model's state dict to \(save)")
        }
        if let checkpointPath { print("training state saved to \(checkpointPath) (continue with --resume \(checkpointPath))") }
        print(String(cFormat: "final test accuracy %.4f in %.2f s", accuracy, Date().timeIntervalSince(start)))
        if distributed { try dist.destroyProcessGroup() }
    }

    /// `--augment`: torchvision's `RandomCrop(size, padding: size / 8)` and/or `RandomHorizontalFlip()`,
    /// on the normalised batches. The padding is black: the value normalisation gives a 0 pixel,
    /// which is the training split's minimum for these datasets.
    func trainAugmentation(_ split: DataSplit, steps: [String]) -> transforms.Compose {
        let (h, w) = (split.imageShape[1], split.imageShape[2])
        let black = split.trainX.numel > 0 ? split.trainX.min().item() : 0
        return transforms.Compose(steps.map { step -> any transforms.Transform in
            step == "crop" ? transforms.RandomCrop([h, w], padding: [Swift.max(1, Swift.min(h, w) / 8)], fill: black)
                           : transforms.RandomHorizontalFlip()
        })
    }

    func makeOptimizer(_ params: [Tensor]) -> optim.Optimizer {
        switch optimizer {
        case .sgd: return optim.SGD(params, lr: effectiveLR, momentum: momentum, weightDecay: effectiveWeightDecay)
        case .adam: return optim.Adam(params, lr: effectiveLR, weightDecay: effectiveWeightDecay)
        case .adamw: return optim.AdamW(params, lr: effectiveLR, weightDecay: effectiveWeightDecay)
        case .rmsprop: return optim.RMSprop(params, lr: effectiveLR, weightDecay: effectiveWeightDecay, momentum: momentum)
        }
    }

    func makeScheduler(_ opt: optim.Optimizer, epochs: Int, stepsPerEpoch: Int) -> optim.lrScheduler.LRScheduler? {
        switch scheduler {
        case .step: return optim.lrScheduler.StepLR(opt, stepSize: stepSize, gamma: 0.1)
        case .cosine: return optim.lrScheduler.CosineAnnealingLR(opt, tMax: epochs)
        case .onecycle: return optim.lrScheduler.OneCycleLR(opt, maxLr: effectiveLR, epochs: epochs, stepsPerEpoch: Swift.max(stepsPerEpoch, 1))
        case .none: return nil
        }
    }
}

/// One training loop: epochs over a loader and evaluation. `--distributed` shards the loader with a
/// `DistributedSampler`, sets `afterBackward` to average the gradients over the ranks, and lets only rank 0
/// log and save (the caller checks `isMainProcess`).
struct Trainer {
    let model: PreparedModel
    let optimizer: optim.Optimizer
    let scheduler: optim.lrScheduler.LRScheduler?
    let perBatchScheduler: Bool
    /// Called after `backward()` and before `step()` (gradient all-reduce).
    var afterBackward: ((nn.Module) -> Void)? = nil
    /// Whether this process logs and writes files (rank 0).
    var isMainProcess = true
    /// Where the model lives; batches are moved there.
    var device: Device = .cpu
    /// `--augment`'s batch transform (random crop and/or flip), applied to each training batch.
    var augmentation: transforms.Compose? = nil
    /// `--amp`'s autocast dtype (forward passes and the loss), or nil for float32.
    var autocastDtype: DType? = nil
    /// `--amp fp16`'s loss scaler.
    var scaler: torch.amp.GradScaler? = nil
    let lossFn = nn.CrossEntropyLoss()

    init(model: PreparedModel, optimizer: optim.Optimizer, scheduler: optim.lrScheduler.LRScheduler?, perBatchScheduler: Bool) {
        self.model = model
        self.optimizer = optimizer
        self.scheduler = scheduler
        self.perBatchScheduler = perBatchScheduler
    }

    /// One pass over the batches of `bar`; returns the mean training loss.
    mutating func trainEpoch<S: Sequence>(_ bar: ProgressBar<S>) -> Double where S.Element == (Tensor, Tensor) {
        model.module.train()
        var total = 0.0, batches = 0
        for (batch, y) in bar {
            let x = augmentation.map { t in
                t.applyToBatch(batch) ?? torch.stack((0..<batch.size(0)).map { t(batch[$0]) })
            } ?? batch
            optimizer.zeroGrad()
            let loss = autocast { lossFn(model(x.to(device)), y.to(device)) }
            if let scaler {
                scaler.scale(loss).backward()
                afterBackward?(model.module)
                scaler.step(optimizer)
                scaler.update()
            } else {
                loss.backward()
                afterBackward?(model.module)
                optimizer.step()
            }
            if perBatchScheduler { scheduler?.step() }
            total += loss.item()
            batches += 1
            bar.setPostfix(["loss": total / Double(batches)])
        }
        return total / Double(Swift.max(batches, 1))
    }

    /// `body` under `--amp`'s autocast on the training device (as is, without `--amp`).
    func autocast<R>(_ body: () -> R) -> R {
        guard let autocastDtype else { return body() }
        return torch.autocast(deviceType: device.type, dtype: autocastDtype, body)
    }

    /// Mean loss and accuracy on `x`, `y` in eval mode without autograd.
    func evaluate(_ x: Tensor, _ y: Tensor, batchSize: Int) -> (loss: Double, accuracy: Double) {
        model.module.eval()
        return torch.noGrad {
            var lossSum = 0.0, correct = 0.0
            let n = x.size(0)
            for start in stride(from: 0, to: n, by: batchSize) {
                let end = Swift.min(n, start + batchSize)
                let labels = y[start..<end].to(device)
                let (out, loss) = autocast { () -> (Tensor, Tensor) in
                    let out = model(x[start..<end].to(device))
                    return (out, lossFn(out, labels))
                }
                lossSum += loss.item() * Double(end - start)
                correct += (out.argmax(dim: 1) .== labels).sum().item()
            }
            return (lossSum / Double(Swift.max(n, 1)), correct / Double(Swift.max(n, 1)))
        }
    }
}

/// `--device`: auto picks CUDA when a GPU is usable; asking for CUDA without one is an error that says why.
func resolveDevice(_ name: String) throws -> Device {
    do { return try Device(choosing: name) } catch {
        if case DeviceChoiceError.unavailable = error { throw ValidationError("--device: \(error); use --device cpu") }
        throw ValidationError("--device: \(error)")
    }
}
