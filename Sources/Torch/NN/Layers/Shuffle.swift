/// Channel rearrangements: `F.pixelShuffle` / `nn.PixelShuffle` (sub-pixel upsampling), `F.pixelUnshuffle` /
/// `nn.PixelUnshuffle`, and `F.channelShuffle` / `nn.ChannelShuffle` (ShuffleNet). All are reshapes and permutes,
/// so their gradients (of every order) come from the view ops.

extension nn.functional {
    /// Moves blocks of `r²` channels into `r × r` spatial blocks: `(*, C·r², H, W)` → `(*, C, H·r, W·r)`.
    ///
    /// ```swift
    /// let y = F.pixelShuffle(torch.randn(1, 8, 3, 3), 2)   // [1, 2, 6, 6]
    /// ```
    public static func pixelShuffle(_ input: Tensor, _ upscaleFactor: Int) -> Tensor {
        let r = upscaleFactor
        checkedArguments { try pixelShuffleCheck(input.shape, upscaleFactor: r) }
        let s = input.shape, lead = Array(s.dropLast(3))
        let (c, h, w) = (s[s.count - 3], s[s.count - 2], s[s.count - 1])
        let k = lead.count
        let blocks = input.reshape(lead + [c / (r * r), r, r, h, w])
        return blocks.permute(Array(0..<k) + [k, k + 3, k + 1, k + 4, k + 2]).reshape(lead + [c / (r * r), h * r, w * r])
    }

    /// Checks `F.pixelShuffle`'s arguments, with PyTorch's messages.
    static func pixelShuffleCheck(_ s: [Int], upscaleFactor r: Int) throws {
        try requireArgument(s.count >= 3, "pixel_shuffle expects input to have at least 3 dimensions, but got input with \(s.count) dimension(s)")
        try requireArgument(r > 0, "pixel_shuffle expects a positive upscale_factor, but got \(r)")
        let c = s[s.count - 3]
        try requireArgument(c % (r * r) == 0, "pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of upscale_factor, but input.size(-3)=\(c) is not divisible by \(r * r)")
    }

    /// The inverse of `pixelShuffle`: `(*, C, H·r, W·r)` → `(*, C·r², H, W)`.
    public static func pixelUnshuffle(_ input: Tensor, _ downscaleFactor: Int) -> Tensor {
        let r = downscaleFactor
        precondition(input.dim >= 3, "pixel_unshuffle expects input to have at least 3 dimensions, but got input with \(input.dim) dimension(s)")
        precondition(r > 0, "pixel_unshuffle expects a positive downscale_factor, but got \(r)")
        let s = input.shape, lead = Array(s.dropLast(3))
        let (c, h, w) = (s[s.count - 3], s[s.count - 2], s[s.count - 1])
        precondition(h % r == 0, "pixel_unshuffle expects height to be divisible by downscale_factor, but input.size(-2)=\(h) is not divisible by \(r)")
        precondition(w % r == 0, "pixel_unshuffle expects width to be divisible by downscale_factor, but input.size(-1)=\(w) is not divisible by \(r)")
        let k = lead.count
        let blocks = input.reshape(lead + [c, h / r, r, w / r, r])
        return blocks.permute(Array(0..<k) + [k, k + 2, k + 4, k + 1, k + 3]).reshape(lead + [c * r * r, h / r, w / r])
    }

    /// Splits the `C` channels of an `(N, C, *)` input into `groups` groups and interleaves them
    /// (channel `g · (C/groups) + i` moves to `i · groups + g`), as ShuffleNet does between grouped convolutions.
    public static func channelShuffle(_ input: Tensor, _ groups: Int) -> Tensor {
        precondition(input.dim >= 3, "channel_shuffle expects input to have at least 3 dimensions, but got input with \(input.dim) dimension(s)")
        precondition(groups > 0, "channel_shuffle expects groups to be positive, but got \(groups) groups")
        let s = input.shape, c = s[1]
        precondition(c % groups == 0, "Number of channels must be divisible by groups. Got \(c) channels and \(groups) groups.")
        let rest = Array(s.dropFirst(2))
        return input.reshape([s[0], groups, c / groups] + rest).transpose(1, 2).reshape(s).contiguous()
    }
}

extension nn {
    /// `F.pixelShuffle` as a layer: `nn.PixelShuffle(3)` prints `PixelShuffle(upscale_factor=3)`.
    public final class PixelShuffle: Module {
        public let upscaleFactor: Int
        public init(_ upscaleFactor: Int) { self.upscaleFactor = upscaleFactor; super.init() }
        public convenience init(upscaleFactor: Int) { self.init(upscaleFactor) }
        public override func forward(_ x: Tensor) -> Tensor { F.pixelShuffle(x, upscaleFactor) }
        public override func extraRepr() -> String { "upscale_factor=\(upscaleFactor)" }
    }

    /// `F.pixelUnshuffle` as a layer: `nn.PixelUnshuffle(2)` prints `PixelUnshuffle(downscale_factor=2)`.
    public final class PixelUnshuffle: Module {
        public let downscaleFactor: Int
        public init(_ downscaleFactor: Int) { self.downscaleFactor = downscaleFactor; super.init() }
        public convenience init(downscaleFactor: Int) { self.init(downscaleFactor) }
        public override func forward(_ x: Tensor) -> Tensor { F.pixelUnshuffle(x, downscaleFactor) }
        public override func extraRepr() -> String { "downscale_factor=\(downscaleFactor)" }
    }

    /// `F.channelShuffle` as a layer: `nn.ChannelShuffle(2)` prints `ChannelShuffle(groups=2)`.
    public final class ChannelShuffle: Module {
        public let groups: Int
        public init(_ groups: Int) { self.groups = groups; super.init() }
        public convenience init(groups: Int) { self.init(groups) }
        public override func forward(_ x: Tensor) -> Tensor { F.channelShuffle(x, groups) }
        public override func extraRepr() -> String { "groups=\(groups)" }
    }
}
