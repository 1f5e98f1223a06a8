# fixture: the change the commenter made to EdgeModel.backward(): both losses are backwarded before either optimizer steps
# source: https://github.com/knazeri/edge-connect/issues/188
# torch: ok
# strict: ok

import torch
import torch.nn as nn
import torch.optim as optim


class AdversarialLoss(nn.Module):
    def __init__(self, target_real_label=1.0, target_fake_label=0.0):
        super(AdversarialLoss, self).__init__()
        self.register_buffer('real_label', torch.tensor(target_real_label))
        self.register_buffer('fake_label', torch.tensor(target_fake_label))
        self.criterion = nn.BCELoss()

    def __call__(self, outputs, is_real, is_disc=None):
        labels = (self.real_label if is_real else self.fake_label).expand_as(outputs)
        return self.criterion(outputs, labels)


class EdgeGenerator(nn.Module):
    def __init__(self):
        super(EdgeGenerator, self).__init__()
        self.encoder = nn.Sequential(nn.Conv2d(3, 8, kernel_size=3, padding=1), nn.ReLU())
        self.decoder = nn.Conv2d(8, 1, kernel_size=3, padding=1)

    def forward(self, x):
        return torch.sigmoid(self.decoder(self.encoder(x)))


class Discriminator(nn.Module):
    def __init__(self, in_channels):
        super(Discriminator, self).__init__()
        self.conv1 = nn.Sequential(nn.Conv2d(in_channels, 8, kernel_size=4, stride=2, padding=1), nn.LeakyReLU(0.2))
        self.conv2 = nn.Sequential(nn.Conv2d(8, 16, kernel_size=4, stride=2, padding=1), nn.LeakyReLU(0.2))
        self.conv3 = nn.Conv2d(16, 1, kernel_size=3, stride=1, padding=1)

    def forward(self, x):
        conv1 = self.conv1(x)
        conv2 = self.conv2(conv1)
        conv3 = self.conv3(conv2)
        return torch.sigmoid(conv3), [conv1, conv2, conv3]


class EdgeModel(nn.Module):
    def __init__(self, fm_loss_weight=10.0):
        super(EdgeModel, self).__init__()
        self.iteration = 0
        self.fm_loss_weight = fm_loss_weight
        self.add_module('generator', EdgeGenerator())
        self.add_module('discriminator', Discriminator(in_channels=2))
        self.add_module('l1_loss', nn.L1Loss())
        self.add_module('adversarial_loss', AdversarialLoss())
        self.gen_optimizer = optim.Adam(params=self.generator.parameters(), lr=1e-4, betas=(0.0, 0.9))
        self.dis_optimizer = optim.Adam(params=self.discriminator.parameters(), lr=1e-5, betas=(0.0, 0.9))

    def process(self, images, edges, masks):
        self.iteration += 1
        self.gen_optimizer.zero_grad()
        self.dis_optimizer.zero_grad()

        outputs = self(images, edges, masks)
        gen_loss = 0
        dis_loss = 0

        # discriminator loss
        dis_input_real = torch.cat((images, edges), dim=1)
        dis_input_fake = torch.cat((images, outputs.detach()), dim=1)
        dis_real, dis_real_feat = self.discriminator(dis_input_real)
        dis_fake, dis_fake_feat = self.discriminator(dis_input_fake)
        dis_real_loss = self.adversarial_loss(dis_real, True, True)
        dis_fake_loss = self.adversarial_loss(dis_fake, False, True)
        dis_loss += (dis_real_loss + dis_fake_loss) / 2

        # generator adversarial loss
        gen_input_fake = torch.cat((images, outputs), dim=1)
        gen_fake, gen_fake_feat = self.discriminator(gen_input_fake)
        gen_gan_loss = self.adversarial_loss(gen_fake, True, False)
        gen_loss += gen_gan_loss

        # generator feature matching loss
        gen_fm_loss = 0
        for i in range(len(dis_real_feat)):
            gen_fm_loss += self.l1_loss(gen_fake_feat[i], dis_real_feat[i].detach())
        gen_fm_loss = gen_fm_loss * self.fm_loss_weight
        gen_loss += gen_fm_loss

        logs = [("l_d1", dis_loss.item()), ("l_g1", gen_gan_loss.item()), ("l_fm", gen_fm_loss.item())]
        return outputs, gen_loss, dis_loss, logs

    def forward(self, images, edges, masks):
        edges_masked = edges * (1 - masks)
        images_masked = (images * (1 - masks)) + masks
        inputs = torch.cat((images_masked, edges_masked, masks), dim=1)
        return self.generator(inputs)

    def backward(self, gen_loss=None, dis_loss=None):
        if dis_loss is not None:
            dis_loss.backward()
        if gen_loss is not None:
            gen_loss.backward()
        self.dis_optimizer.step()
        self.gen_optimizer.step()


def train(edge_model, train_loader, epochs=2):
    for epoch in range(epochs):
        for images, edges, masks in train_loader:
            outputs, gen_loss, dis_loss, logs = edge_model.process(images, edges, masks)
            edge_model.backward(gen_loss, dis_loss)
            print(epoch, edge_model.iteration, logs)


torch.manual_seed(0)
loader = [(torch.rand(2, 1, 8, 8), (torch.rand(2, 1, 8, 8) > 0.5).float(), (torch.rand(2, 1, 8, 8) > 0.7).float()) for _ in range(2)]
train(EdgeModel(), loader)
