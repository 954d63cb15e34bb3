import { HINT_BURST_MS, HINT_SHARE, HintBudget } from './hint-budget';

describe('HintBudget', () => {
  let now: number;
  let budget: HintBudget;
  beforeEach(() => {
    now = 1_000_000;
    budget = new HintBudget(() => now);
  });

  it('counts the time a hint really took: a slow one leaves nothing until the share has paid it back', () => {
    const reserved = budget.take()!;
    expect(reserved).toBeGreaterThan(0);
    budget.settle(reserved, HINT_BURST_MS + 100); // 100 ms more than the bucket held
    const payBack = 100 / HINT_SHARE;
    now += payBack - 1;
    expect(budget.take()).toBeNull();
    now += 2;
    expect(budget.take()).not.toBeNull();
  });

  it('reserves a hint as it starts, so hints started together stop once their expected time fills the bucket', () => {
    const costs: number[] = [];
    for (let r = budget.take(); r !== null; r = budget.take()) costs.push(r);
    expect(costs.length).toBe(Math.ceil(HINT_BURST_MS / costs[0]));
    // They end: each took its expected time, and the bucket refills from empty at the share.
    for (const c of costs) budget.settle(c, c);
    expect(budget.take()).toBeNull();
    now += 1 + (costs.length * costs[0] - HINT_BURST_MS) / HINT_SHARE;
    expect(budget.take()).not.toBeNull();
  });

  it('never holds more than a burst in hand after a long quiet time', () => {
    now += 3_600_000;
    const costs: number[] = [];
    for (let r = budget.take(); r !== null; r = budget.take()) costs.push(r);
    expect(costs.length).toBe(Math.ceil(HINT_BURST_MS / costs[0]));
  });
});
