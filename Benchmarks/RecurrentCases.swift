// Recurrent-layer cases. Twins in scripts/bench_pytorch.py (same names, inputs and loop bodies).
import Torch

/// One training step of the LSTM classifier (MNIST rows as a sequence): `nn.LSTM(28, 128,
/// batchFirst: true)` on `x [64, 28, 28]`, `nn.Linear(128, 10)` on the last step's output,
/// `nn.CrossEntropyLoss`, `optim.Adam(lr: 1e-3)`: zero_grad, forward, backward, step. ms per step.
func lstmStepCase(_ s: BenchSettings) -> BenchResult {
    let lstm = nn.LSTM(28, 128, batchFirst: true), fc = nn.Linear(128, 10)
    let criterion = nn.CrossEntropyLoss()
    let opt = optim.Adam(lstm.parameters() + fc.parameters(), lr: 1e-3)
    let x = torch.randn(64, 28, 28), y = torch.randint(0, 10, [64])
    let t = measure(s) { iters in
        for _ in 0..<iters {
            opt.zeroGrad()
            let (out, _) = lstm(x)
            let loss = criterion(fc(out.select(1, -1)), y)
            loss.backward()
            opt.step()
        }
    }
    return .millis(t)
}

func registerRecurrentCases() {
    register("lstm_step", "LSTM(28,128,batch_first) + Linear(128,10) + CrossEntropyLoss + Adam, x [64,28,28]: "
             + "one train step (ms)", lstmStepCase)
}
