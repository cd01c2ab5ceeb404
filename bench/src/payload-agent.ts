import { defineAgent, defineTool, type DurableStore } from '@cairn/sdk';
import { scriptedModel } from '@cairn/testing';
import { z } from 'zod';

/** A seeded generator of numbers in [0, 1) (mulberry32), so every run writes the same bytes. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

const firstNames = ['Maria', 'Kwame', 'Aiko', 'Lars', 'Priya', 'Mateo', 'Fatima', 'Oliver', 'Chen'];
const lastNames = ['Okafor', 'Lindqvist', 'Tanaka', 'Moreau', 'Haddad', 'Novak', 'Costa', 'Reyes'];
const streets = ['Harbour Road', 'Linden Allee', 'Rue des Tanneurs', 'Calle Mayor', 'Elm Street'];
const cities: ReadonlyArray<[string, string]> = [
  ['Rotterdam', 'NL'],
  ['Leipzig', 'DE'],
  ['Lyon', 'FR'],
  ['Valencia', 'ES'],
  ['Portland', 'US'],
];
const products: ReadonlyArray<[string, number]> = [
  ['Stainless steel water bottle, 750 ml', 24.9],
  ['Merino wool hiking socks (2 pairs)', 19.5],
  ['Waterproof trail jacket, men, M', 149],
  ['Ultralight camping stove with igniter', 54.95],
  ['Headlamp, 400 lumen, rechargeable', 39.9],
  ['Trekking poles, carbon, adjustable', 89],
  ['Dry bag, 20 l, roll-top', 17.25],
];
const statuses = ['delivered', 'shipped', 'processing', 'returned'];

type Random = () => number;
const pick = <T>(random: Random, list: readonly T[]): T =>
  list[Math.floor(random() * list.length)]!;
const digits = (random: Random, n: number) =>
  Array.from({ length: n }, () => Math.floor(random() * 10)).join('');
const money = (value: number) => Math.round(value * 100) / 100;
const day = (random: Random) =>
  `2025-${String(1 + Math.floor(random() * 12)).padStart(2, '0')}-${String(1 + Math.floor(random() * 28)).padStart(2, '0')}`;

function address(random: Random, type: string) {
  const [city, country] = pick(random, cities);
  return {
    type,
    line1: `${1 + Math.floor(random() * 240)} ${pick(random, streets)}`,
    city,
    postalCode: digits(random, 5),
    country,
  };
}

/** An order as a model passes it to a tool: about 1 KB of JSON. */
export function orderArgs(seed: number) {
  const random = seeded(seed * 2 + 1);
  const items = Array.from({ length: 5 }, () => {
    const [name, unitPrice] = pick(random, products);
    return {
      sku: `SKU-${digits(random, 6)}`,
      name,
      quantity: 1 + Math.floor(random() * 3),
      unitPrice,
    };
  });
  const subtotal = items.reduce((sum, item) => sum + item.quantity * item.unitPrice, 0);
  return {
    orderId: `ORD-${digits(random, 8)}`,
    customerId: `CUS-${digits(random, 7)}`,
    placedAt: `${day(random)}T${digits(random, 2).replace(/^[3-9]/, '1')}:${digits(random, 2).replace(/^[6-9]/, '5')}:00Z`,
    currency: 'EUR',
    items,
    totals: { subtotal: money(subtotal), shipping: 4.95, tax: money(subtotal * 0.21) },
    shipping: {
      method: pick(random, ['standard', 'express', 'pickup']),
      ...address(random, 'shipping'),
    },
    payment: {
      method: 'card',
      brand: pick(random, ['visa', 'mastercard']),
      last4: digits(random, 4),
    },
    channel: 'web',
    warehouse: 'NL-RTM-02',
    priority: 'normal',
    giftWrap: random() < 0.2,
    note: 'Customer asked whether the jacket can be exchanged for size L before it ships.',
  };
}

/** A customer record as a CRM answers a lookup: about 1 KB of JSON. */
export function customerRecord(seed: number) {
  const random = seeded(seed * 2 + 2);
  const first = pick(random, firstNames);
  const last = pick(random, lastNames);
  return {
    id: `CUS-${digits(random, 7)}`,
    name: `${first} ${last}`,
    email: `${first}.${last}@example.com`.toLowerCase(),
    phone: `+31 6 ${digits(random, 4)} ${digits(random, 4)}`,
    tier: pick(random, ['standard', 'silver', 'gold']),
    segment: 'outdoor-enthusiast',
    customerSince: day(random).replace('2025', '2019'),
    lifetimeValue: money(200 + random() * 4_000),
    addresses: [address(random, 'billing'), address(random, 'shipping')],
    preferences: { language: 'en', newsletter: random() < 0.5, contact: 'email' },
    recentOrders: Array.from({ length: 5 }, () => ({
      id: `ORD-${digits(random, 8)}`,
      date: day(random),
      total: money(20 + random() * 300),
      status: pick(random, statuses),
    })),
    flags: random() < 0.3 ? ['late-delivery-2024'] : [],
    notes: `Called on ${day(random)} about a delayed parcel; offered a ${5 + Math.floor(random() * 10)}% voucher, accepted.`,
  };
}

/** What a model says before its tool call: about 1 KB of prose about the order. */
export function modelText(seed: number): string {
  const order = orderArgs(seed);
  const lines = order.items
    .map((item) => `${item.quantity} x ${item.name} (${item.sku}) at ${item.unitPrice} EUR`)
    .join('; ');
  return [
    `Thanks for the details. I found order ${order.orderId}, placed on ${order.placedAt.slice(0, 10)} by customer ${order.customerId}.`,
    `It contains ${lines}. The subtotal comes to ${order.totals.subtotal} EUR before ${order.totals.tax} EUR of VAT and ${order.totals.shipping} EUR shipping.`,
    `It is set to ship by ${order.shipping.method} to ${order.shipping.line1}, ${order.shipping.postalCode} ${order.shipping.city} (${order.shipping.country}), paid by ${order.payment.brand} card ending in ${order.payment.last4}.`,
    `Their last ${order.items.length} lines add up to ${order.items.reduce((n, item) => n + item.quantity, 0)} units, which is within the exchange policy of 30 days for unworn items in original packaging.`,
    'Let me check. Before I answer the question about exchanging the jacket for size L, I will look up the customer record to check their tier, their recent orders and whether an exchange is still possible before the parcel leaves the warehouse.',
  ].join(' ');
}

/**
 * An agent whose scripted model answers at once, each of `trips` trips with about 1 KB of text and a tool call
 * whose arguments are a 1 KB order, the tool answering a 1 KB customer record; then a final answer of 1 KB text.
 * The tool is not idempotent, so its call is journaled as started and as settled with its outcome.
 */
export function payloadAgent(options: { name: string; trips: number; store: DurableStore }) {
  const tool = defineTool({
    name: 'lookup_customer',
    description: 'Looks up the customer who placed an order.',
    input: z.looseObject({ orderId: z.string(), customerId: z.string() }),
    execute: (_order, context) => customerRecord(Number(context.toolCallId.slice(1))),
  });
  const model = scriptedModel(
    (_request, turn) =>
      turn < options.trips
        ? {
            text: modelText(turn),
            toolCalls: [{ id: `c${turn}`, name: 'lookup_customer', args: orderArgs(turn) }],
          }
        : { text: modelText(turn) },
    { recordCalls: false },
  );
  return defineAgent({
    name: options.name,
    model,
    tools: [tool],
    maxTrips: options.trips + 1,
    durable: { store: options.store },
  });
}
