#!/usr/bin/env python3
"""PyTorch twin of Examples/FashionMNISTMLP (tutorial 000's MLP on Fashion-MNIST): the same program and
printed lines, for comparing accuracies and times.

    /root/torchenv/bin/python scripts/tutorial000_mlp.py [ROOT [EPOCHS [DECAY_START]]]

ROOT holds the four IDX files (gzip or not; default /usr/share/datasets/fashion-mnist). torchvision reads
them from <cache>/FashionMNIST/raw uncompressed, so they are unpacked once into $TMPDIR. EPOCHS defaults to 20;
the learning rate is multiplied by 0.1 at epochs DECAY_START, DECAY_START+5, ... (default 0, the tutorial's).
"""
import gzip
import os
import shutil
import sys
import tempfile
import time

import torch
import torch.nn.functional as F
import torchvision.transforms as transforms
from torch import nn
from torch.utils.data import DataLoader
from torchvision.datasets import FashionMNIST

FILES = ["train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"]


def torchvision_root(root):
    """A folder laid out as torchvision expects (<dir>/FashionMNIST/raw/<uncompressed files>)."""
    if all(os.path.exists(os.path.join(root, "FashionMNIST", "raw", f)) for f in FILES):
        return root
    cache = os.path.join(tempfile.gettempdir(), "fashion-mnist-torchvision")
    raw = os.path.join(cache, "FashionMNIST", "raw")
    os.makedirs(raw, exist_ok=True)
    for f in FILES:
        dst = os.path.join(raw, f)
        if os.path.exists(dst):
            continue
        src = os.path.join(root, f)
        if os.path.exists(src + ".gz"):
            with gzip.open(src + ".gz", "rb") as i, open(dst + ".part", "wb") as o:
                shutil.copyfileobj(i, o)
        else:
            shutil.copyfile(src, dst + ".part")
        os.replace(dst + ".part", dst)
    return cache


class Net(nn.Module):
    def __init__(self, in_dim, n_hidden_1, n_hidden_2, out_dim):
        super().__init__()
        self.layer1 = nn.Sequential(nn.Linear(in_dim, n_hidden_1), nn.BatchNorm1d(n_hidden_1))
        self.layer2 = nn.Sequential(nn.Linear(n_hidden_1, n_hidden_2), nn.BatchNorm1d(n_hidden_2))
        self.layer3 = nn.Sequential(nn.Linear(n_hidden_2, out_dim))

    def forward(self, x):
        x = F.relu(self.layer1(x))
        x = F.relu(self.layer2(x))
        return self.layer3(x)


def main():
    args = sys.argv[1:]
    root = args[0] if len(args) > 0 else "/usr/share/datasets/fashion-mnist"
    num_epoches = int(args[1]) if len(args) > 1 else 20
    decay_start = int(args[2]) if len(args) > 2 else 0
    train_batch_size, test_batch_size, lr, momentum = 64, 128, 0.01, 0.5

    transform = transforms.Compose([transforms.ToTensor(), transforms.Normalize([0.5], [0.5])])
    tv_root = torchvision_root(root)
    train_dataset = FashionMNIST(tv_root, train=True, transform=transform, download=False)
    test_dataset = FashionMNIST(tv_root, train=False, transform=transform, download=False)
    train_loader = DataLoader(train_dataset, batch_size=train_batch_size, shuffle=True)
    test_loader = DataLoader(test_dataset, batch_size=test_batch_size, shuffle=False)

    torch.manual_seed(0)
    model = Net(28 * 28, 300, 100, 10)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum)

    start = time.time()
    for epoch in range(num_epoches):
        train_loss = 0
        train_acc = 0
        model.train()
        if epoch >= decay_start and (epoch - decay_start) % 5 == 0:
            optimizer.param_groups[0]["lr"] *= 0.1
        for img, label in train_loader:
            img = img.view(img.size(0), -1)
            out = model(img)
            loss = criterion(out, label)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            train_loss += loss.item()
            _, pred = out.max(1)
            num_correct = (pred == label).sum().item()
            train_acc += num_correct / img.shape[0]
        eval_loss = 0
        eval_acc = 0
        model.eval()
        with torch.no_grad():
            for img, label in test_loader:
                img = img.view(img.size(0), -1)
                out = model(img)
                loss = criterion(out, label)
                eval_loss += loss.item()
                _, pred = out.max(1)
                num_correct = (pred == label).sum().item()
                eval_acc += num_correct / img.shape[0]
        print("epoch: {}, Train Loss: {:.4f}, Train Acc: {:.4f}, Test Loss: {:.4f}, Test Acc: {:.4f}"
              .format(epoch, train_loss / len(train_loader), train_acc / len(train_loader),
                      eval_loss / len(test_loader), eval_acc / len(test_loader)), flush=True)
    print(f"total time: {time.time() - start:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
