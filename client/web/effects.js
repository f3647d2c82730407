// What the page adds for fun: short sounds made with Web Audio (off unless the player
// turns them on; nothing is downloaded) and a shower of suits when a game is won (a
// still banner instead when the system asks for reduced motion).

import { reducedMotion } from "./board.js";

let audio = null;

function context() {
  if (audio) return audio;
  const Audio = window.AudioContext || window.webkitAudioContext;
  if (!Audio) return null;
  audio = new Audio();
  return audio;
}

// Notes: [frequency in Hz, start in s, length in s].
const SOUNDS = {
  move: { type: "triangle", gain: 0.06, notes: [[660, 0, 0.05]] },
  home: { type: "triangle", gain: 0.07, notes: [[880, 0, 0.06], [1175, 0.05, 0.08]] },
  draw: { type: "sine", gain: 0.05, notes: [[520, 0, 0.04]] },
  refused: { type: "square", gain: 0.03, notes: [[180, 0, 0.12]] },
  win: {
    type: "triangle",
    gain: 0.08,
    notes: [[523, 0, 0.14], [659, 0.12, 0.14], [784, 0.24, 0.14], [1047, 0.36, 0.3]],
  },
};

export function playSound(name) {
  const sound = SOUNDS[name];
  const ctx = sound ? context() : null;
  if (!ctx) return;
  if (ctx.state === "suspended") ctx.resume().catch(() => {});
  const now = ctx.currentTime;
  for (const [frequency, at, length] of sound.notes) {
    const osc = ctx.createOscillator();
    const gain = ctx.createGain();
    osc.type = sound.type;
    osc.frequency.value = frequency;
    gain.gain.setValueAtTime(0.0001, now + at);
    gain.gain.exponentialRampToValueAtTime(sound.gain, now + at + 0.01);
    gain.gain.exponentialRampToValueAtTime(0.0001, now + at + length);
    osc.connect(gain).connect(ctx.destination);
    osc.start(now + at);
    osc.stop(now + at + length + 0.02);
  }
}

const SUITS = ["♠", "♥", "♦", "♣"];

// Celebrate a win over `host` for a few seconds: falling suits, or with reduced motion
// a glow that does not move.
export function celebrate(host) {
  const layer = document.createElement("div");
  layer.className = "celebration";
  layer.dataset.testid = "celebration";
  layer.setAttribute("aria-hidden", "true");
  const still = reducedMotion();
  layer.dataset.motion = still ? "reduced" : "full";
  if (!still) {
    for (let i = 0; i < 36; i += 1) {
      const piece = document.createElement("span");
      const suit = SUITS[i % 4];
      piece.className = `confetti ${suit === "♥" || suit === "♦" ? "red" : "black"}`;
      piece.textContent = suit;
      piece.style.left = `${(i * 37) % 100}%`;
      piece.style.animationDelay = `${((i * 53) % 90) / 100}s`;
      piece.style.animationDuration = `${1.6 + ((i * 29) % 10) / 10}s`;
      piece.style.fontSize = `${18 + ((i * 13) % 18)}px`;
      layer.append(piece);
    }
  }
  host.append(layer);
  setTimeout(() => layer.remove(), still ? 2500 : 3600);
  return layer;
}
