// Distributed data-parallel training of tutorial 000's MLP (or the Fashion-MNIST CNN) on
// Fashion-MNIST, one process per rank under MPI:
//
//   mpirun -np 2 .build/release/ddp-mnist                       # MLP, 5 epochs, batch 64 per rank
//   mpirun -np 2 .build/release/ddp-mnist --model cnn --epochs 2 --checkpoint /tmp/cnn.pt
//   mpirun -np 3 .build/release/ddp-mnist --epochs 4 --checkpoint /tmp/mlp.pt   # resumes, with 3 processes
//   srun -n 4 .build/release/ddp-mnist ...                      # under Slurm
//
// Each rank reads its share of every epoch through a DistributedSampler; DistributedDataParallel
// averages the gradients; rank 0 prints the metrics (summed over the ranks) and writes the
// checkpoint (model without the `module.` prefix, optimizer, epoch) atomically after every epoch.
// A run given an existing checkpoint resumes after its last epoch, with any number of processes.
// Options (`ddp-mnist --help`): --model mlp|cnn  --epochs N  --batch-size B (per rank)  --lr X  --data-dir DIR (or --data)
//          --checkpoint PATH  --threads T (per process, default 1)  --max-steps N (per epoch, for quick runs)
//          --device cpu|cuda|auto  --backend mpi|nccl
// With --device cuda each rank trains on cuda:(its rank on the node % GPU count), as torchrun scripts pick
// theirs; the gradients are averaged through pinned host memory by MPI, or on the GPUs by NCCL (--backend nccl).
//
//   mpirun -np 2 .build/release/ddp-mnist --device cuda --backend nccl
import ArgumentParser
import Foundation
import Torch
import TorchVision
import TutorialModels

enum ModelKind: String, ExpressibleByArgument, CaseIterable {
    case mlp, cnn
}

@main
struct DDPMNIST: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ddp-mnist",
        abstract: "Data-parallel training on Fashion-MNIST, one process per MPI rank (mpirun -np N ddp-mnist ...).")

    @Option(help: "The network: tutorial 000's MLP or the Fashion-MNIST CNN.")
    var model: ModelKind = .mlp

    @Option(help: "Number of epochs in all (a resumed run continues up to this epoch).")
    var epochs = 5

    @Option(help: "Batch size per rank.")
    var batchSize = 64

    @Option(help: "Learning rate of SGD (momentum 0.5).")
    var lr = 0.01

    @Option(help: "Threads per process.")
    var threads = 1

    @Option(name: [.customLong("data-dir"), .long],
            help: ArgumentHelp("The Fashion-MNIST folder (apt-get install dataset-fashion-mnist).", valueName: "folder"))
    var data = "/usr/share/datasets/fashion-mnist"

    @Option(help: ArgumentHelp("Save the training state here after every epoch (rank 0), and resume from it when it exists.",
                               valueName: "path"))
    var checkpoint: String?

    @Option(help: "At most this many steps per epoch, in training and in evaluation (for quick runs).")
    var maxSteps: Int?

    @Option(help: "Where each rank trains: cpu, cuda (cuda:(rank on the node % GPU count)) or auto (cuda where a GPU is usable).")
    var device = "cpu"

    @Option(help: "How gradients are averaged: mpi (CUDA tensors through pinned host copies) or nccl (on the GPUs; needs --device cuda and libnccl.so.2).")
    var backend = "mpi"

    func validate() throws {
        for (name, value) in [("--epochs", epochs), ("--batch-size", batchSize), ("--threads", threads), ("--max-steps", maxSteps ?? 1)]
        where value <= 0 {
            throw ValidationError("\(name) must be a positive integer (got \(value))")
        }
        guard lr > 0 && lr.isFinite else { throw ValidationError("--lr must be a positive number (got \(lr))") }
        guard ["cpu", "cuda", "auto"].contains(device) else { throw ValidationError("--device must be cpu, cuda or auto (got \(device))") }
        guard let b = dist.Backend(rawValue: backend) else { throw ValidationError("--backend must be mpi or nccl (got \(backend))") }
        if b == .nccl && device == "cpu" { throw ValidationError("--backend nccl needs --device cuda") }
    }

    func run() throws {
        let opts = self
        setvbuf(stdout, nil, _IOLBF, 0)
        torch.setNumThreads(opts.threads)
        var device = Device.cpu
        do {
            if try Device(choosing: opts.device) != .cpu {
                // One GPU per rank: the launcher's local rank modulo the GPUs of this node.
                device = .cuda(try dist.getNodeLocalRank(fallbackRank: 0) % torch.cuda.deviceCount())
                torch.cuda.setDevice(device)
            }
            try dist.initProcessGroup(backend: dist.Backend(rawValue: opts.backend)!)
        } catch {
            fail("\(error)")
        }
        let rank = dist.getRank(), world = dist.getWorldSize()
        let isMain = rank == 0

        let transform = transforms.Compose([transforms.ToTensor(), transforms.Normalize(mean: [0.5], std: [0.5])])
        let trainSet: datasets.FashionMNIST, testSet: datasets.FashionMNIST
        do {
            trainSet = try datasets.FashionMNIST(root: opts.data, train: true, transform: transform)
            testSet = try datasets.FashionMNIST(root: opts.data, train: false, transform: transform)
        } catch {
            fail("cannot load Fashion-MNIST from \(opts.data): \(error)\n(install it with: apt-get install dataset-fashion-mnist)")
        }

        torch.manualSeed(0)
        let net: nn.Module = opts.model == .mlp ? TutorialMLP(28 * 28, 300, 100, 10) : FashionCNN()
        net.to(device)
        let optimizer = optim.SGD(net.parameters(), lr: opts.lr, momentum: 0.5)
        var startEpoch = 0

        // Resume: every rank loads the checkpoint (the file must be visible to all of them, e.g. on a
        // shared filesystem); DDP's construction then broadcasts rank 0's weights anyway.
        if let path = opts.checkpoint, FileManager.default.fileExists(atPath: path) {
            do {
                let ckpt = try torch.load(path)
                try net.loadStateDict(ckpt["model_state_dict"]!)
                try optimizer.loadStateDict(ckpt["optimizer_state_dict"]!)
                startEpoch = ckpt["epoch"]?.intValue ?? 0
                let savedBy = ckpt["world_size"]?.intValue ?? 0
                if isMain { print("resumed from \(path) after epoch \(startEpoch) (saved by \(savedBy) processes, now \(world))") }
            } catch {
                fail("cannot resume from \(path): \(error)")
            }
        }

        let model = try DistributedDataParallel(net)
        let criterion = nn.CrossEntropyLoss()
        let sampler = DistributedSampler(trainSet, seed: 0)
        let trainLoader = DataLoader(trainSet, batchSize: opts.batchSize, sampler: sampler)
        // Evaluation: rank r takes test samples r, r + world, ... (no padding, so the counts are exact).
        let testLoader = DataLoader(testSet, batchSize: 256, sampler: Array(stride(from: rank, to: testSet.count, by: world)))
        func prepare(_ x: Tensor) -> Tensor { (opts.model == .mlp ? x.view(x.size(0), -1) : x).to(device) }

        if isMain {
            print("ddp-mnist: \(opts.model) on \(world) process\(world == 1 ? "" : "es") (\(dist.mpiLibraryVersion()?.split(separator: ",").first.map(String.init) ?? "MPI")), "
                  + "batch \(opts.batchSize) per rank (\(opts.batchSize * world) global), \(opts.threads) thread(s) each, "
                  + "device \(device == .cpu ? "cpu" : "cuda"), backend \(dist.getBackend())")
        }
        for epoch in startEpoch..<opts.epochs {
            let start = Date()
            sampler.setEpoch(epoch)
            model.train()
            var lossSum = 0.0, correct = 0.0, seen = 0.0
            for (step, (img, hostLabel)) in trainLoader.enumerated() {
                if step == opts.maxSteps { break }
                let label = hostLabel.to(device)
                let out = model(prepare(img))
                let loss = criterion(out, label)
                optimizer.zeroGrad()
                loss.backward()
                optimizer.step()
                let n = Double(img.size(0))
                lossSum += loss.item() * n
                correct += (out.argmax(dim: 1) .== label).sum().item()
                seen += n
            }
            model.eval()
            var testCorrect = 0.0, testSeen = 0.0
            torch.noGrad {
                for (step, (img, label)) in testLoader.enumerated() {
                    if step == opts.maxSteps { break }
                    testCorrect += (model(prepare(img)).argmax(dim: 1) .== label.to(device)).sum().item()
                    testSeen += Double(img.size(0))
                }
            }
            let totals = torch.tensor([lossSum, correct, seen, testCorrect, testSeen], dtype: .float64)
            try dist.allReduce(totals, op: .sum)
            let t = totals.toArray(as: Double.self)
            let seconds = Date().timeIntervalSince(start)
            if isMain {
                print(String(format: "epoch %d/%d  train loss %.4f  acc %.2f%%  test acc %.2f%%  %.1f s  (%.0f samples/s)",
                             epoch + 1, opts.epochs, t[0] / t[2], 100 * t[1] / t[2], 100 * t[3] / t[4], seconds, t[2] / seconds))
                if let path = opts.checkpoint {
                    // torch.save writes a temporary file and renames it: a crash never leaves a torn checkpoint.
                    try torch.save(["epoch": .int(epoch + 1), "world_size": .int(world),
                                    "model_state_dict": StateValue(model.module.stateDict()),
                                    "optimizer_state_dict": optimizer.stateDict()], path)
                }
            }
            try dist.barrier()
        }
        try dist.destroyProcessGroup()
    }
}

func fail(_ message: String) -> Never {
    fputs("ddp-mnist: \(message)\n", stderr)
    exit(2)
}
