// One kafkajs scenario of kidscope's real-traffic harness (realclients/).
//
//   node kafkajs.js '{"role":"producer","brokers":["127.0.0.1:40001"],"clientId":"x", ...}'
//
// Roles: producer, consumer-classic, admin (kafkajs has no KIP-848 consumer
// and sends no KIP-714 telemetry). It prints one JSON line on stdout,
// {"summary": "..."}, and exits 0; on failure it prints the error on stderr
// and exits 1. It stops by itself: every wait is bounded by deadlineMs
// (and the harness kills it after that too).
'use strict'

const { Kafka, logLevel, ConfigResourceTypes, Partitioners } = require('kafkajs')

const args = JSON.parse(process.argv[2])
const deadline = Date.now() + args.deadlineMs
setTimeout(() => {
  console.error(`kafkajs ${args.role}: deadline of ${args.deadlineMs} ms passed`)
  process.exit(3)
}, args.deadlineMs).unref()

// Requests the client sent, by API name (kafkajs's REQUEST instrumentation
// event), for the summary.
const sent = {}
function countRequests (client) {
  client.on(client.events.REQUEST, (e) => {
    sent[e.payload.apiName] = (sent[e.payload.apiName] || 0) + 1
  })
}
function sentString () {
  return 'client sent ' + Object.keys(sent).sort().map((k) => `${sent[k]}×${k}`).join(' ')
}

// until polls cond every 20 ms until it holds or the deadline passes.
async function until (what, cond) {
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

const kafka = new Kafka({
  clientId: args.clientId,
  brokers: args.brokers,
  logLevel: logLevel.WARN,
  connectionTimeout: 3000,
  requestTimeout: 10000,
  retry: { retries: 3, initialRetryTime: 100, maxRetryTime: 1000 }
})

async function producer () {
  // kafkajs's defaults (not idempotent: an idempotent producer asks the
  // controller for a producer ID, and the mock names a controller that is
  // not one of its brokers).
  const p = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner })
  countRequests(p)
  await p.connect()
  const n = args.records
  const bursts = 6
  for (let b = 0; b < bursts; b++) {
    const orders = []
    const payments = []
    for (let i = Math.floor(b * n / bursts); i < Math.floor((b + 1) * n / bursts); i++) {
      if (i % 3 === 2) {
        payments.push({ key: `order-${i}`, value: JSON.stringify({ amount: 100 + i }), headers: { source: 'kidscope' } })
      } else {
        orders.push({ key: `order-${i}`, value: JSON.stringify({ id: i, qty: i % 7 + 1 }) })
      }
    }
    await p.sendBatch({
      acks: -1,
      topicMessages: [{ topic: args.topicOrders, messages: orders }, { topic: args.topicPayments, messages: payments }]
    })
  }
  await p.disconnect()
  return `produced ${n} records; ${sentString()}`
}

async function consumerClassic () {
  const c = kafka.consumer({ groupId: args.group, heartbeatInterval: 300, sessionTimeout: 6000, maxWaitTimeInMs: 200 })
  countRequests(c)
  let heartbeats = 0
  c.on(c.events.HEARTBEAT, () => { heartbeats++ })
  await c.connect()
  await c.subscribe({ topics: [args.topicOrders, args.topicPayments], fromBeginning: true })
  let got = 0
  await c.run({
    autoCommit: true,
    autoCommitInterval: 500,
    eachMessage: async () => { got++ }
  })
  await until(`${args.records} records`, () => got >= args.records)
  await until('two heartbeats', () => heartbeats >= 2)
  // disconnect commits what was consumed and leaves the group.
  await c.disconnect()
  return `consumed ${got} records in group ${args.group}; ${sentString()}`
}

async function admin () {
  const a = kafka.admin()
  countRequests(a)
  await a.connect()
  const failed = []
  const step = async (what, fn) => {
    try {
      return await fn()
    } catch (e) {
      failed.push(`${what}: ${e.message}`)
      return undefined
    }
  }
  const topicA = `${args.prefix}-a`
  const topicB = `${args.prefix}-b`
  await step('create topics', () => a.createTopics({
    waitForLeaders: true,
    topics: [topicA, topicB].map((topic) => ({
      topic, numPartitions: 3, replicationFactor: 3, configEntries: [{ name: 'retention.ms', value: '3600000' }]
    }))
  }))
  const cluster = await step('describe cluster', () => a.describeCluster())
  const broker = cluster && cluster.brokers.length > 0 ? String(cluster.brokers[0].nodeId) : '0'
  await step('describe configs', () => a.describeConfigs({
    includeSynonyms: false,
    resources: [{ type: ConfigResourceTypes.TOPIC, name: args.topicOrders }, { type: ConfigResourceTypes.BROKER, name: broker }]
  }))
  const listed = await step('list groups', () => a.listGroups())
  const groups = listed ? listed.groups.map((g) => g.groupId).sort() : []
  if (groups.length > 0) await step('describe groups', () => a.describeGroups(groups))
  const offsets = await step('fetch topic offsets', () => a.fetchTopicOffsets(args.topicOrders))
  const total = offsets ? offsets.reduce((s, o) => s + Number(o.high), 0) : 0
  await step('fetch group offsets', () => a.fetchOffsets({ groupId: args.group, topics: [args.topicOrders, args.topicPayments] }))
  await step('delete topic', () => a.deleteTopics({ topics: [topicB] }))
  await a.disconnect()
  const outcome = failed.length === 0 ? 'every call succeeded' : 'failed: ' + failed.join('; ')
  return `groups [${groups.join(' ')}], ${total} records in ${args.topicOrders}; ${outcome}; ${sentString()}`
}

const roles = { producer, 'consumer-classic': consumerClassic, admin }

async function main () {
  const role = roles[args.role]
  if (!role) throw new Error(`unknown role ${args.role}`)
  const summary = await role()
  process.stdout.write(JSON.stringify({ summary }) + '\n')
}

main().then(() => process.exit(0), (e) => {
  console.error(`kafkajs ${args.role}: ${e.stack || e}`)
  process.exit(1)
})
